@kernel(category="{category}")
def {name}({params}):
    """{doc} Whole rows per tile (a row must fit in UB)."""
    ROWS = tunable(pow2(1, 64), default=4)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
{prelude}    for t in rows({first}, rows=ROWS, cores=CORES, depth=DEPTH{rowargs}):
{body}
{epilogue}
