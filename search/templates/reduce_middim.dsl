@kernel(category="reduce")
def {name}(x: In[{T}], y: Out[{T}]):
    """{op} over axis {dim}: x seen as [A, K, B]; each tile is TILE contiguous elements of B,
    accumulated over the K steps."""
    TILE = tunable(pow2(64, 16384), default=2048)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in slabs(x, dim={dim}, tile=TILE, cores=CORES, depth=DEPTH):
        acc = tile_fill({init}, {T})
        for k in steps(t):
            acc = {combine}
        store(y, t, acc)
