"""One torch thread per trial process.

Why: a trial's correctness check runs the PyTorch reference and compares small tensors
(the reduced shapes), where torch's intra-op thread pool costs more than it gives; with
several trial workers sharing the cores it also oversubscribes them, and its threads spin
against each other. Measured on a 2-core machine under load: a warm ``celu`` trial took
0.45-0.9 s of CPU with torch's default 2 threads and 0.09-0.14 s with one
(``benchmarks/trial_cost.py`` prints the trial figures). ``$ASCENDCRAFT_TORCH_THREADS``
sets another count (``0``: leave torch's default).
"""

from __future__ import annotations

import os

THREADS_ENV = "ASCENDCRAFT_TORCH_THREADS"
DEFAULT_THREADS = 1


def limit_torch_threads() -> int:
    """Set torch's intra-op threads for this process (once is enough); the count now used."""
    import torch

    raw = os.environ.get(THREADS_ENV, "").strip()
    try:
        n = int(raw) if raw else DEFAULT_THREADS
    except ValueError:
        n = DEFAULT_THREADS
    if n > 0 and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return torch.get_num_threads()
