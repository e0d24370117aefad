@kernel(category="activation")
def log_softmax(x: In[{T}], y: Out[{T}]):
    """log_softmax over the last dim: x - max - log(sum(exp(x - max))), whole rows per tile."""
    ROWS = tunable(pow2(1, 64), default=4)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        a = cast(load(x, t), f32)
        m = row_max(a)
        d = a - m
        s = row_sum(exp(d))
        store(y, t, cast(d - log(s), {T}))
