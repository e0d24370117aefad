@kernel(category="{category}")
def {name}({params}):
    """{doc} Output rows x column chunks; for each window offset the input rows are staged
    in UB once per (kd, kh) and one Gather per kw picks the strided taps."""
    ROWS = tunable(pow2(1, 64), default=16)
    CHUNK = tunable(pow2(64, 4096), default=1024)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in windows({first}, dims={dims}, kernel={kernel}, stride={stride}, padding={padding}, fill={fill}, rows=ROWS, chunk=CHUNK, cores=CORES, depth=DEPTH):
{body}
