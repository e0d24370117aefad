@kernel(category="reduce")
def sum_lastdim(x: In[{T}], y: Out[{T}]):
    """Sum over the last dim, accumulated over column chunks (rows of any width)."""
    ROWS = tunable(pow2(1, 16), default=1)
    CHUNK = tunable(pow2(256, 16384), default=8192)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        s = row_fill(0.0)
        for c in chunks(t, CHUNK):
            s = s + row_sum(cast(load(x, c), f32))
        store(y, t, cast(s, {T}))
