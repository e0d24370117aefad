"""Trial processes run torch with one intra-op thread (or what the environment says)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, torch
from ascendcraft.app.objective import KernelObjective
from ascendcraft.app.task import TaskRef
from ascendcraft.app.threads import THREADS_ENV, limit_torch_threads
seen = [torch.get_num_threads()]
KernelObjective(TaskRef(op='relu', shape='64x64'), 'Ascend910B2')._evaluator()
seen.append(torch.get_num_threads())
for value in ("2", "0", "junk"):
    os.environ[THREADS_ENV] = value
    seen.append(limit_torch_threads())
print(*seen)
"""


def test_the_trial_worker_uses_one_torch_thread_unless_told():
    env = {k: v for k, v in os.environ.items() if k != "ASCENDCRAFT_TORCH_THREADS"}
    env["OMP_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env=env, timeout=600, check=True).stdout.split()
    # torch's default, the trial worker's one thread, then 2; 0 leaves it; junk is the default
    assert [int(x) for x in out] == [2, 1, 2, 2, 1]
