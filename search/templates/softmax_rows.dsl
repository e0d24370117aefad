@kernel(category="activation")
def softmax(x: In[{T}], y: Out[{T}]):
    """Softmax over the last dim, ROWS whole rows per tile (rows must fit in UB)."""
    ROWS = tunable(pow2(1, 64), default=4)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        a = cast(load(x, t), f32)
        m = row_max(a)
        e = exp(a - m)
        s = row_sum(e)
        store(y, t, cast(e / s, {T}))
