"""Benchmarks (issue 19): every task of a suite tuned with the same trial budget, scored
by the suite metrics (compile and correct rates, fast_p, geometric-mean speedup, share of
roofline). The runs are a campaign with a fixed budget per task (:mod:`ascendcraft.campaign`:
its scheduling, stop/resume and record); this package adds the suite (:mod:`.suite`), the
metrics (:mod:`.metrics`), the results read back from a run directory (:mod:`.results`)
and the report (:mod:`.report`, :mod:`.plots`)."""

from .run import BenchConfig, regenerate, run_bench

__all__ = ["BenchConfig", "regenerate", "run_bench"]
