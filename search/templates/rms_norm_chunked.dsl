@kernel(category="normalization")
def rms_norm(x: In[{T}], y: Out[{T}]):
    """RMSNorm over the last dim in two passes over column chunks."""
    ROWS = tunable(pow2(1, 16), default=1)
    CHUNK = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        ss = row_fill(0.0)
        for c in chunks(t, CHUNK):
            a = cast(load(x, c), f32)
            ss = ss + row_sum(a * a)
        rstd = rsqrt(ss / width(t) + {eps})
        for c in chunks(t, CHUNK):
            store(y, c, cast(cast(load(x, c), f32) * rstd, {T}))
