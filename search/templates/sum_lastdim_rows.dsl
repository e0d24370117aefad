@kernel(category="reduce")
def sum_lastdim(x: In[{T}], y: Out[{T}]):
    """Sum over the last dim, whole rows per tile; one value per row is stored."""
    ROWS = tunable(pow2(1, 64), default=8)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        store(y, t, cast(row_sum(cast(load(x, t), f32)), {T}))
