"""The command line as a user runs it: JSON fields, readable errors, tiling agreement."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from ascendcraft.dsl.lowering.kernel import lower
from ascendcraft.search.builtin import propose

from ascendcraft.emulator.runner import TilingRequest, compute_tiling
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ascendcraft.cli", *args], capture_output=True, text=True,
                          timeout=600)


def test_check_json_fields() -> None:
    r = run_cli("check", "--op", "add", "--shape", "1000003", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["op"] == "add" and d["correct"] is True
    assert d["max_abs_err"] == 0.0
    assert d["shapes"] == [[[1000003], [1000003]]]
    assert d["timing"] == "modeled" and 0 < d["roofline_frac"] <= 1 and d["eager_us"] > 0
    assert d["candidates"][0]["correct"] is True


def test_ops_json_lists_the_vector_ops() -> None:
    r = run_cli("ops", "--json")
    names = {o["name"]: o["category"] for o in json.loads(r.stdout)}
    for op in ("add", "mul_scalar", "relu", "gelu", "sigmoid", "swish", "softmax", "log_softmax",
               "layer_norm", "rms_norm", "sum_lastdim", "max_middim"):
        assert op in names


def test_unknown_op_is_one_readable_error() -> None:
    r = run_cli("check", "--op", "no_such_op")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "no_such_op" in r.stderr


def test_unsupported_op_says_why(tmp_path) -> None:
    """An op nothing can express (a sort) names the ATen op in one paragraph, exit 2."""
    f = tmp_path / "sort_task.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n"
                 "class Model(nn.Module):\n    def forward(self, x):\n"
                 "        return torch.sort(x, dim=-1).values\n\n"
                 "def get_inputs():\n    return [torch.randn(64, 256)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    r = run_cli("check", "--task", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "sort" in r.stderr and len(r.stderr.strip().splitlines()) <= 3


def test_cpp_tiling_matches_python_mirror() -> None:
    """The checker evaluates the same formulas in Python that the generated C++ runs."""
    for op, shapes in (("softmax", [[7, 65535], [1000, 7], [3, 8]]), ("add", [[1000003], [31]]),
                       ("max_middim", [[4, 31, 1023], [2, 5, 7]])):
        task = get_task(op)
        for cand in propose(task):
            prep = prepare(cand.name, cand.source)
            so = Evaluator(task).build(prep, {}).files[0]
            lk = lower(prep.program, {})
            for shape in shapes:
                t = task.with_shape(shape)
                dims = [list(s.shape) for s in t.inputs if s.is_tensor] + [list(s) for s, _ in t.output_meta()]
                tun = [prep.program.defaults()[x.name] for x in prep.program.tunables]
                res = compute_tiling(so, TilingRequest(shapes=dims, tunables=tun, core_num=48))
                assert res.ok, res.message
                got = np.frombuffer(res.tiling[: 8 * len(lk.tiling.fields())], dtype=np.int64)
                want = lk.tiling.evaluate(dims, prep.program.defaults(), 48)
                assert dict(zip(lk.tiling.fields(), got.tolist(), strict=True)) == want


def test_8gib_task_file_is_checked_and_timed_without_allocating(tmp_path) -> None:
    """A task whose input is 8 GiB (2^31 fp32): shapes come from the meta device, correctness
    runs at reduced shapes, timing is trace-only at the full shape; peak memory stays small."""
    f = tmp_path / "huge_swish.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n"
                 "class Model(nn.Module):\n    def forward(self, x):\n"
                 "        return x * torch.sigmoid(x) + 0.5 * x\n\n"
                 "def get_inputs():\n    return [torch.randn(2 ** 31)]\n\n"
                 "def get_init_inputs():\n    return []\n")
    code = ("import json, resource, sys\nfrom ascendcraft.cli import main\n"
            "rc = main(['check', '--task', sys.argv[1], '--json'])\n"
            "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    r = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=900)
    out, rss = r.stdout.rsplit("MAXRSS", 1)
    d = json.loads(out.strip().splitlines()[-1])
    assert d["correct"] is True and d["timing_shapes"] == [[2 ** 31]]
    assert 0 < d["roofline_frac"] <= 1
    self_kib, child_kib = map(int, rss.split())
    assert max(self_kib, child_kib) < 4 * 1024 * 1024, rss  # far below the 8 GiB input
