@cube_kernel(category="matmul")
def {name}({params}):
    """{doc} Cube stage: Fixpipe rounds the product to {out_dtype} into a workspace (as eager
    PyTorch's matmul output is rounded before the ops after it); the vector stage reads it back
    and applies the epilogue on the vector cores."""
    BM = tunable(choice(64, 128, 256), default=128)
    BN = tunable(choice(64, 128, 256), default=256)
    BK = tunable(choice(32, 64, 128), default=64)
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)
    STAGES = tunable(choice(1, 2), default=2)
    L0D = tunable(choice(1, 2), default=2)
    ACCD = tunable(choice(1, 2), default=1)
    ORDER = tunable(choice(row_major, col_major, swizzled), default=swizzled)
    GROUP = tunable(choice(2, 4, 8), default=4)
    CORES = tunable(choice({cores}), default={cores_default})
    TAIL = tunable(choice(0, 1, 2), default={tail_default})
    VROWS = tunable(pow2(1, 64), default=8)                 # epilogue rows per UB tile
    VCHUNK = tunable(pow2(256, 8192), default=2048)         # epilogue columns per UB tile
    VDEPTH = tunable(choice(1, 2), default=2)
    mm_ws = workspace({out_dtype})
    for blk in blocks({a}, {b}, m=BM, n=BN{flags}, order=ORDER, group=GROUP, cores=CORES, acc_depth=ACCD,
                      tail=TAIL):
        acc = accumulator(blk{acc_args})
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1({a_name}, kk)
            b1 = to_l1({b_name}, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(mm_ws, blk, cast(acc, {out_dtype}))
    for t in rows(mm_ws, rows=VROWS, depth=VDEPTH):
        for cc in chunks(t, VCHUNK):
            v = cast(load(mm_ws, cc), f32)
            store({out}, cc, {epilogue})
