@kernel(category="{category}")
def {name}({params}):
    """{doc} x seen as [A, K, B] around axis {dim}; a tile is TILE contiguous elements of B,
    walked over the K steps (a strided reduction, vectorised over B)."""
    TILE = tunable(pow2(64, 16384), default=2048)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
{prelude}    for t in slabs({first}, dim={dim}, tile=TILE, cores=CORES, depth=DEPTH):
{body}
{epilogue}
