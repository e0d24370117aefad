@cube_kernel(category="matmul")
def mhc_post(x: In[{T}], y: In[{T}], h_post: In[{T}], h_res: In[{T}], out: Out[{T}]):
    """mHC post-mapping, n = {n}: out[i] = sum_j h_res[i, j] x[j] + h_post[i] y, per token.
    Memory-bound stream mixing on the vector cores (an M = {n} matmul per token would leave the
    cube idle): the {n2} coefficients of a tile of tokens are loaded once ([tokens, G] -> [G, tokens]
    with Gather), then each chunk of the {n} streams and of y is read once and the {n} new
    streams written once."""
    ROWS = tunable(pow2(1, 64), default=4)                  # tokens per tile
    CH = tunable(pow2(128, 8192), default=512)              # columns per chunk of one stream
    VDEPTH = tunable(choice(1, 2), default=2)
    for t in rows(x, rows=ROWS, dims=2, depth=VDEPTH):
        hp = cast(load_group(h_post, t, {n}), f32)
        hr = cast(load_group(h_res, t, {n2}), f32)
        for c in chunks(t, CH, parts={n}):
            yv = cast(load(y, c), f32)
{loads}
{mix}
