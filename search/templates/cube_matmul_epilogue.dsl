@cube_kernel(category="matmul")
def {name}({params}):
    """{doc} Cube stage writes fp32 partial results (split-K) to a workspace; the vector stage
    sums the splits and applies the epilogue on the vector cores."""
    BM = tunable(choice(64, 128, 256), default=128)
    BN = tunable(choice(64, 128, 256), default=256)
    BK = tunable(choice(32, 64, 128), default=64)
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)
    STAGES = tunable(choice(1, 2), default=2)
    L0D = tunable(choice(1, 2), default=2)
    ACCD = tunable(choice(1, 2), default=1)
    ORDER = tunable(choice(row_major, col_major, swizzled), default=swizzled)
    GROUP = tunable(choice(2, 4, 8), default=4)
    SPLITK = tunable(choice({splits}), default={split_default})   # K splits (partial sums in the workspace)
    CORES = tunable(choice({cores}), default={cores_default})
    TAIL = tunable(choice(0, 1, 2), default={tail_default})
    VROWS = tunable(pow2(1, 64), default=8)                 # epilogue rows per UB tile
    VCHUNK = tunable(pow2(256, 8192), default=2048)         # epilogue columns per UB tile
    VDEPTH = tunable(choice(1, 2), default=2)
    acc_ws = workspace(f32)
    for blk in blocks({a}, {b}, m=BM, n=BN{flags}, order=ORDER, group=GROUP, split_k=SPLITK, cores=CORES,
                      acc_depth=ACCD, tail=TAIL):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1({a_name}, kk)
            b1 = to_l1({b_name}, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(acc_ws, blk, acc)
    for t in rows(acc_ws, rows=VROWS, depth=VDEPTH):
        for cc in chunks(t, VCHUNK):
            v = load(acc_ws, cc)
            store({out}, cc, {epilogue})
