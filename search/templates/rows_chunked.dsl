@kernel(category="{category}")
def {name}({params}):
    """{doc} Rows of any width, walked in column chunks (one chunks loop per pass)."""
    ROWS = tunable(pow2(1, 16), default=1)
    CHUNK = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
{prelude}    for t in rows({first}, rows=ROWS, cores=CORES, depth=DEPTH{rowargs}):
{body}
{epilogue}
