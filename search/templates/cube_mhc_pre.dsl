@cube_kernel(category="matmul")
def mhc_pre(x: In[{T}], phi: In[{T}], bias: In[{T}], h: Out[{T}], h_post: Out[{T}], h_res: Out[{T}]):
    """mHC pre-mapping, n = {n}. Cube stage: raw^T [{G}, tokens] = phi . x^T, with phi stored
    {G} x (n*C) (A) and x stored tokens x (n*C) (transposed B). Vector stage
    per tile of tokens: RMS over the n*C values (pass 1), gates and Sinkhorn-Knopp on {G} values
    per token, then the weighted stream sum h = sum_i h_pre[i] x[i] (pass 2)."""
    BN = tunable(choice(64, 128, 256), default=128)         # tokens per cube block
    BK = tunable(choice(64, 128, 256), default=64)
    KL1 = tunable(choice(256, 512, 1024, 2048), default=256)
    STAGES = tunable(choice(1, 2), default=2)
    L0D = tunable(choice(1, 2), default=2)
    SPLITK = tunable(choice(1, 2, 3, 4), default=1)
    CORES = tunable(choice({cores}), default={cores_default})
    ROWS = tunable(pow2(1, 64), default=4)                  # tokens per vector tile
    CH = tunable(pow2(256, 8192), default=1024)             # columns per chunk (RMS pass)
    CH2 = tunable(pow2(128, 4096), default=1024)            # columns per chunk of one stream (sum pass)
    VDEPTH = tunable(choice(1, 2), default=2)
    raw = workspace(f32)
    for blk in blocks(matrix(phi, 1), matrix(x, 1), m=32, n=BN, transpose_b=True, split_k=SPLITK,
                      cores=CORES):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1(phi, kk)
            b1 = to_l1(x, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(raw, blk, acc)
    for t in rows(x, rows=ROWS, dims=2, depth=VDEPTH):
        ss = row_fill(0.0)
        for c in chunks(t, CH):
            ss = ss + row_sum(cast(load(x, c), f32) ** 2)
        inv = rsqrt(ss / width(t) + {eps})
        z = load_cols(raw, t, {G}) * inv
        b = cast(load_members(bias, {G}), f32)
        pre = sigmoid(z[0:{n}] * {alpha_pre} + b[0:{n}])
        store(h_post, t, cast(2.0 * sigmoid(z[{n}:{n2}] * {alpha_post} + b[{n}:{n2}]), {T}))
        store(h_res, t, cast(sinkhorn(exp(z[{n2}:{G}] * {alpha_res} + b[{n2}:{G}]), {n}, {iters}), {T}))
        for c in chunks(t, CH2, parts={n}):
{weighted_sum}
            store(h, c, cast(s{last}, {T}))
