"""Generated size and time of hostile DSL programs (issue 10): nested ``x ** 4`` (which used
to grow 4x per level: 8 levels gave 82k lines of C++) and huge tunable domains (which used to
be enumerated before the size limit was checked).

    python benchmarks/dsl_hostile_sizes.py
"""

from __future__ import annotations

import time

from ascendcraft.dsl.lowering.kernel import lower
from ascendcraft.dsl.parser import DslError, parse


def program(expr: str, prelude: str = "") -> str:
    return ('@kernel(category="activation")\ndef k(x: In[f32], y: Out[f32]):\n' + prelude
            + "    for t in tiles(x, tile=1024):\n        a = load(x, t)\n" + f"        store(y, t, {expr})\n")


def main() -> None:
    for levels in (8, 10, 40):
        expr = "(" * levels + "a" + ") ** 4" * levels
        t0 = time.perf_counter()
        src = lower(program(expr)).emulator_source()
        dt = time.perf_counter() - t0
        print(f"nested ** 4 x{levels:>2}: {len(src.splitlines()):>6} lines, {len(src) / 1e3:7.1f} kB of C++, "
              f"lowered in {dt * 1e3:6.1f} ms")
    for dom in ("span(1, 2000000000, 1)", "span(1, 1000000000000, 1)"):
        t0 = time.perf_counter()
        try:
            parse(program("a", f"    T = tunable({dom})\n"))
            msg = "accepted"
        except DslError as e:
            msg = str(e)
        print(f"tunable({dom}): refused in {(time.perf_counter() - t0) * 1e3:.2f} ms: {msg}")


if __name__ == "__main__":
    main()
