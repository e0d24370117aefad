@kernel(category="elementwise")
def add(x: In[{T}], y: In[{T}], z: Out[{T}]):
    """z = x + y, streamed through UB in tiles of TILE elements."""
    TILE = tunable(pow2(256, 32768), default=8192)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        store(z, t, load(x, t) + load(y, t))
