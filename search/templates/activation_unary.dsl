@kernel(category="activation")
def {name}(x: In[{T}], y: Out[{T}]):
    """Elementwise activation computed in f32: y = {expr}."""
    TILE = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        a = cast(load(x, t), f32)
        store(y, t, cast({expr}, {T}))
