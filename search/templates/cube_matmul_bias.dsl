@cube_kernel(category="matmul")
def {name}({params}):
    """{doc} Cube stage only: the accumulator starts from the bias (bias table, the first mmad adds it)
    and Fixpipe writes the result ({store_note}) — no vector pass."""
    BM = tunable(choice(64, 128, 256), default=128)        # output block rows (L0C / L0A tile)
    BN = tunable(choice(64, 128, 256), default=256)        # output block columns (<= 256: fp32 bias in the 1 KB bias table)
    BK = tunable(choice(32, 64, 128), default=64)          # K depth of one mmad (L0A / L0B)
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)  # K depth of one L1 stage
    STAGES = tunable(choice(1, 2), default=2)             # L1 buffers per operand (2 = ping-pong)
    L0D = tunable(choice(1, 2), default=2)                # L0A / L0B buffers
    ACCD = tunable(choice(1, 2), default=1)               # L0C buffers (2: Fixpipe overlaps the next block)
    ORDER = tunable(choice(row_major, col_major, swizzled), default=swizzled)
    GROUP = tunable(choice(2, 4, 8), default=4)            # block rows per swizzle group
    CORES = tunable(choice({cores}), default={cores_default})
    TAIL = tunable(choice(0, 1, 2), default={tail_default})              # split the last partial wave's blocks: 1 along N, 2 along M
    FSPLIT = tunable(choice(0, 1, 2), default={fix_split_default})       # split Fixpipe; 1: first / last K stage per column half, 2: every stage per row half
    for blk in blocks({a}, {b}, m=BM, n=BN{flags}, order=ORDER, group=GROUP, cores=CORES, acc_depth=ACCD,
                      tail=TAIL, fix_split=FSPLIT):
        acc = accumulator(blk, bias={bias})
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1({a_name}, kk)
            b1 = to_l1({b_name}, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store({out}, blk, {store})
