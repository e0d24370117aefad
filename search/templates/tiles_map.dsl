@kernel(category="{category}")
def {name}({params}):
    """{doc}"""
    TILE = tunable(pow2(256, 16384), default={tile})
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
{prelude}    for t in tiles({first}, tile=TILE, cores=CORES, depth=DEPTH):
{body}
{epilogue}
