"""Build cache: keyed by content, safe when several processes build the same kernel at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ascendcraft.emulator.build import build_key, entry_glue

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build emulator kernels")

SRC = (
    '#include "kernel_operator.h"\nusing namespace AscendC;\n'
    'extern "C" __global__ __aicore__ void k(GM_ADDR ws, GM_ADDR tiling) {}\n' + entry_glue("k", 2)
)


def test_key_depends_on_sources_and_flags():
    a = build_key({"a.cpp": SRC}, "a.cpp", ["-O1"])
    assert a == build_key({"a.cpp": SRC}, "a.cpp", ["-O1"])
    assert a != build_key({"a.cpp": SRC + " "}, "a.cpp", ["-O1"])
    assert a != build_key({"a.cpp": SRC}, "a.cpp", ["-O2"])
    assert a != build_key({"a.cpp": SRC, "h.h": ""}, "a.cpp", ["-O1"])


def test_concurrent_builds_share_one_result(tmp_path):
    code = (
        "from ascendcraft.emulator.build import build_kernel\n"
        f"print(build_kernel({{'k.cpp': {SRC!r}}}, 'k.cpp'))\n"
    )
    env = dict(os.environ, ASCENDCRAFT_CACHE=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1 and os.path.exists(outs[0])
    dirs = [d for d in (tmp_path / "emulator").iterdir() if d.is_dir() and not d.name.startswith(".")]
    builds = [d for d in dirs if not d.name.startswith("runtime-")]
    assert len(builds) == 1
    assert len(dirs) - len(builds) == 1  # one prebuilt runtime, built by one of the three


def test_prebuilt_runtime_gives_the_header_only_results(monkeypatch):
    """The prebuilt runtime object + precompiled header change how a kernel is compiled,
    not what it computes or traces: outputs, every trace record, the trace summary, the
    error of a failing run and the run statistics are those of the header-only build."""
    import numpy as np
    from test_emulator_kernels import ADD_SRC, add_tiling

    from ascendcraft.emulator import build_kernel, run_kernel
    from ascendcraft.emulator.build import PREBUILT_ENV

    libs = {}
    for mode in ("0", "1"):
        monkeypatch.setenv(PREBUILT_ENV, mode)
        libs[mode] = build_kernel({"add.cpp": ADD_SRC}, "add.cpp")
    assert libs["0"] != libs["1"]
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(3000, dtype=np.float32), rng.standard_normal(3000, dtype=np.float32)
    runs = {}
    for mode, so in libs.items():
        full = run_kernel(so, [x, y], outputs=[(3000, np.float32)], tiling=add_tiling(3000, 256), block_dim=3,
                          trace="records")
        summary = run_kernel(so, [x, y], outputs=[(3000, np.float32)], tiling=add_tiling(3000, 256), block_dim=3)
        bad = run_kernel(so, [x, y], outputs=[(3000, np.float32)], tiling=add_tiling(3000, 250), block_dim=3)
        runs[mode] = (full, summary, bad)
    (f0, s0, b0), (f1, s1, b1) = runs["0"], runs["1"]
    assert f0.ok and f1.ok and s0.ok and s1.ok
    np.testing.assert_array_equal(f0.outputs[0], x + y)
    np.testing.assert_array_equal(f1.outputs[0], f0.outputs[0])
    assert f1.trace.tobytes() == f0.trace.tobytes() and len(f0.trace) > 0
    np.testing.assert_array_equal(s1.trace.records(), s0.trace.records())
    assert (f1.stats, s1.stats) == (f0.stats, s0.stats)
    assert not b0.ok and (b1.ok, b1.status, b1.message) == (b0.ok, b0.status, b0.message)


def test_prebuilt_runtime_is_local_to_each_kernel_library(monkeypatch):
    """RunKernel and the rest of the prebuilt runtime are hidden in each kernel library, so
    a library never binds to another one's copy (another header version) in the same process."""
    from ascendcraft.emulator import build_kernel
    from ascendcraft.emulator.build import PREBUILT_ENV

    monkeypatch.setenv(PREBUILT_ENV, "1")
    so = build_kernel({"k.cpp": SRC}, "k.cpp")
    dyn = subprocess.run(["nm", "-D", "-C", str(so)], capture_output=True, text=True, check=True).stdout
    local = subprocess.run(["nm", "-C", str(so)], capture_output=True, text=True, check=True).stdout
    assert "acx::RunKernel" in local and "acx::RunKernel" not in dyn
    assert " T acx_run" in dyn
