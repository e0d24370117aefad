@kernel(category="normalization")
def layer_norm(x: In[{T}], weight: In[{T}], bias: In[{T}], y: Out[{T}]):
    """LayerNorm over the last dim with affine weight and bias, whole rows per tile."""
    ROWS = tunable(pow2(1, 64), default=4)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, cores=CORES, depth=DEPTH):
        a = cast(load(x, t), f32)
        d = a - row_sum(a) / width(t)
        rstd = rsqrt(row_sum(d * d) / width(t) + {eps})
        g = cast(load_bcast(weight, t), f32)
        b = cast(load_bcast(bias, t), f32)
        store(y, t, cast(d * rstd * g + b, {T}))
