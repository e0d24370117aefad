@kernel(category="normalization")
def rms_norm(x: In[{T}], y: Out[{T}]):
    """RMSNorm over the last dim (no affine), whole rows per tile."""
    ROWS = tunable(pow2(1, 64), default=4)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        a = cast(load(x, t), f32)
        rstd = rsqrt(row_sum(a * a) / width(t) + {eps})
        store(y, t, cast(a * rstd, {T}))
