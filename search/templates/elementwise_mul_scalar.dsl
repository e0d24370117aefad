@kernel(category="elementwise")
def mul_scalar(x: In[{T}], s: Scalar[f32], y: Out[{T}]):
    """y = x * s with s a runtime scalar (passed in the tiling data)."""
    TILE = tunable(pow2(256, 32768), default=8192)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        store(y, t, load(x, t) * s)
