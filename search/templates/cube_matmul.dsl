@cube_kernel(category="matmul")
def {name}({params}):
    """{doc} Cube stage only: Fixpipe writes the result ({store_note})."""
    BM = tunable(choice(64, 128, 256), default={bm_default})        # output block rows (L0C / L0A tile)
    BN = tunable(choice(64, 128, 256), default={bn_default})        # output block columns (L0C / L0B tile)
    BK = tunable(choice(32, 64, 128), default={bk_default})          # K depth of one mmad (L0A / L0B); b_hold streams BK rows per copy
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)  # K depth of one L1 stage
    STAGES = tunable(choice(1, 2), default=2)             # L1 buffers per operand (2 = ping-pong)
    L0D = tunable(choice(1, 2), default=2)                # L0A / L0B buffers
    ACCD = tunable(choice(1, 2), default={acc_depth_default})               # L0C buffers (2: Fixpipe overlaps the next block)
    ORDER = tunable(choice(row_major, col_major, swizzled), default={order_default})
    GROUP = tunable(choice({groups}), default={group_default})  # block rows per swizzle group
    CORES = tunable(choice({cores}), default={cores_default})
    TAIL = tunable(choice(0, 1, 2), default={tail_default})              # split the last partial wave's blocks: 1 along N, 2 along M
    AW = tunable(choice(0, 1), default={a_whole_default})                # 1: the block's whole A panel in L1 (one copy)
    BW = tunable(choice(0, 1), default={b_whole_default})                # 1: the block's whole B panel in L1 (one copy)
    BA = tunable(choice(0, 1, 2, 3, 4), default={b_ahead_default})       # with BW: pieces of the core's next B panel loaded ahead
    BH = tunable(choice({holds}), default={b_hold_default})     # with BW (not BA): K rows / 64 of the panel held, the other K steps stream
    FDEF = tunable(choice(0, 1, 2, 4, 8), default={fix_defer_default})        # with ACCD 2: each block's Fixpipe after the next block's FDEF-th K stage (or its end)
    FSPLIT = tunable(choice(0, 1, 2), default={fix_split_default})       # split Fixpipe; 1: first / last K stage per column half, 2: every stage per row half
    RUN = tunable(choice(1, 2, 4, 8), default={run_default})             # consecutive blocks per core (the held panel serves them)
    for blk in blocks({a}, {b}, m=BM, n=BN{flags}, order=ORDER, group=GROUP, cores=CORES, acc_depth=ACCD,
                      tail=TAIL, a_whole=AW, b_whole=BW, b_ahead=BA, b_hold=BH, fix_defer=FDEF, fix_split=FSPLIT, run=RUN):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1({a_name}, kk)
            b1 = to_l1({b_name}, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store({out}, blk, {store})
