@kernel(category="activation")
def softmax(x: In[{T}], y: Out[{T}]):
    """Softmax over the last dim in three passes over column chunks (rows of any width)."""
    ROWS = tunable(pow2(1, 16), default=1)
    CHUNK = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        m = row_fill(-inf)
        for c in chunks(t, CHUNK):
            m = maximum(m, row_max(cast(load(x, c), f32)))
        s = row_fill(0.0)
        for c in chunks(t, CHUNK):
            s = s + row_sum(exp(cast(load(x, c), f32) - m))
        for c in chunks(t, CHUNK):
            store(y, c, cast(exp(cast(load(x, c), f32) - m) / s, {T}))
