@kernel(category="normalization")
def layer_norm(x: In[{T}], weight: In[{T}], bias: In[{T}], y: Out[{T}]):
    """LayerNorm over the last dim in three passes over column chunks (mean, variance, output)."""
    ROWS = tunable(pow2(1, 16), default=1)
    CHUNK = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        s = row_fill(0.0)
        for c in chunks(t, CHUNK):
            s = s + row_sum(cast(load(x, c), f32))
        mean = s / width(t)
        v = row_fill(0.0)
        for c in chunks(t, CHUNK):
            d = cast(load(x, c), f32) - mean
            v = v + row_sum(d * d)
        rstd = rsqrt(v / width(t) + {eps})
        for c in chunks(t, CHUNK):
            g = cast(load_bcast(weight, c), f32)
            b = cast(load_bcast(bias, c), f32)
            store(y, c, cast((cast(load(x, c), f32) - mean) * rstd * g + b, {T}))
