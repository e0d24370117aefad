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
