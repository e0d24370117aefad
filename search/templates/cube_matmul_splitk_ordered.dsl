@cube_kernel(category="matmul")
def {name}({params}):
    """{doc} Split-K in one cube launch: the K range of each output block is split over the cube
    cores; each split writes its fp32 partial to its workspace slice, one SyncAll, then the
    block's cores add the slices into slice 0 in split order (atomic L1 -> GM adds, one core per
    column share) and convert the complete fp32 sum ({store_note}): one rounding, a fixed add
    order (deterministic), no second launch and no vector pass."""
    BM = tunable(choice(64, 128, 256), default=128)        # output block rows (L0C / L0A tile)
    BN = tunable(choice(64, 128, 256), default={bn_default})        # output block columns (L0C / L0B tile)
    BK = tunable(choice(32, 64, 128), default=64)          # K depth of one mmad (L0A / L0B)
    KL1 = tunable(choice(128, 256, 512, 1024), default=256)  # K depth of one L1 stage
    STAGES = tunable(choice(1, 2), default=2)             # L1 buffers per operand (2 = ping-pong)
    L0D = tunable(choice(1, 2), default=2)                # L0A / L0B buffers
    ORDER = tunable(choice(row_major, col_major, swizzled), default={order_default})
    GROUP = tunable(choice({groups}), default={group_default})  # block rows per swizzle group
    SPLITK = tunable(choice({splits}), default={split_default})   # K splits, combined in this launch
    CORES = tunable(choice({cores}), default={cores_default})
    AW = tunable(choice(0, 1), default={a_whole_default})                # 1: the block's whole A panel in L1 (one copy)
    BW = tunable(choice(0, 1), default={b_whole_default})                # 1: the block's whole B panel in L1 (one copy)
    sum_ws = workspace(f32)
    for blk in blocks({a}, {b}, m=BM, n=BN{flags}, order=ORDER, group=GROUP, split_k=SPLITK, cores=CORES,
                      a_whole=AW, b_whole=BW, ordered_split=sum_ws):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=KL1, depth=STAGES):
            a1 = to_l1({a_name}, kk)
            b1 = to_l1({b_name}, kk)
            for k0 in k_steps(kk, k=BK, depth=L0D):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store({out}, blk, {store})
