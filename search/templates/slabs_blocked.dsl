@kernel(category="{category}")
def {name}({params}):
    """{doc} x seen as [A, K, B] around axis {dim}; a tile is TILE contiguous elements of B,
    and each step copies ROWS rows of K at once (one strided copy) into ROWS partial rows of
    every accumulator, folded into one after the steps (full vectors, no per-row calls)."""
    TILE = tunable(pow2(32, 4096), default=64)
    ROWS = tunable(pow2(1, 256), default=64)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
{prelude}    for t in slabs({first}, dim={dim}, tile=TILE, cores=CORES, depth=DEPTH, rows=ROWS):
{body}
{epilogue}
