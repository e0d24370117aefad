"""Shape-aware default core counts for the vector templates.

The model shares HBM among a launch's running cores, so a last short round of work items
(64 slabs on 48 cores: 16 busy in round two) is bandwidth lost. Two policies, used by the
recipes and the flat-read helpers alike: the fewest cores with the same number of rounds
(``balanced_cores``), and the most cores that split rows evenly (``even_cores``).
"""

from __future__ import annotations

#: The templates' ``CORES`` choices (``CORES = tunable(choice(...))``).
CORE_CHOICES: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32, 40, 48)
#: The templates' CORES tunable line, up to its default.
CORES_TUNABLE = f"CORES = tunable(choice({', '.join(map(str, CORE_CHOICES))})"


def with_cores_default(src: str, cores: int) -> str:
    """A template's source with its CORES tunable defaulting to ``cores`` instead of 48."""
    return src.replace(f"{CORES_TUNABLE}, default=48)", f"{CORES_TUNABLE}, default={cores})", 1)


def balanced_cores(items: int, most: int = 48) -> int:
    """The fewest cores (of CORE_CHOICES) that take as many rounds of ``items`` work items as
    ``most`` cores do: the same rounds, and each busy core gets a larger share of HBM
    (64 slabs: 32 cores, not 48)."""
    rounds = -(-items // most)
    return min(n for n in CORE_CHOICES if -(-items // n) <= rounds)


def even_cores(rows: int, most: int = 48) -> int:
    """The most cores that split ``rows`` evenly enough: a streaming kernel's time is its
    busiest core's rows at one core's HBM share (the channel divided by the cores that run),
    i.e. ceil(rows / n) * n rows' worth; 4096 rows on 48 cores is 86 rounds (4128 rows' worth,
    0.8% idle), on 32 cores 128 (4096). Only for kernels whose vector work per row is well
    under a row's transfer at 32 cores' shares (reductions), since fewer cores each get more;
    and at least 24 cores: below that one core's share nears what one GM->UB path moves
    (Ascend910B2: 1440 GB/s sustained / 24 = 60 GB/s against a 78 GiB/s path)."""
    choices = [n for n in (24, 32, 40, 48) if n <= most]
    padded = {n: -(-rows // n) * min(n, rows) for n in choices}
    best = min(padded.values())
    return most if padded[most] == best else max(n for n in choices if padded[n] == best)
