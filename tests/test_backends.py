"""The Backend seam with the emulator behind it: SoC buffers enforced per run, every launch
of a kernel in order on shared GM, builds cached by source hash, failures as Status values,
times labelled by the backend alone."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ascendcraft.dsl.kernel import Kernel, Launch
from ascendcraft.search.cube_builtin import propose_cube

import ascendcraft
from ascendcraft.backends import (
    Artifact,
    Backend,
    BackendError,
    BackendUnavailable,
    EmulatorBackend,
    TilingArgs,
    get_backend,
)
from ascendcraft.backends import emulator as emulator_backend
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

N = 3 * 17408
BIG_TILES = '''@kernel(category="elementwise")
def add_big(x: In[f32], y: In[f32], z: Out[f32]):
    """z = x + y in tiles too big for a 910B's UB (192 KiB), small enough for a 310P's (256 KiB)."""
    TILE = tunable(choice(1024, 17408), default=17408)
    CORES = tunable(choice(1), default=1)
    DEPTH = tunable(choice(1), default=1)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        store(z, t, load(x, t) + load(y, t))
'''


def _run(backend: Backend, art: Artifact, inputs: list[torch.Tensor], out_shape: tuple[int, ...],
         values: dict[str, int]):
    return backend.run(art, inputs, [(out_shape, torch.float32)], tiling=TilingArgs(values), timeout_s=60)


def test_soc_changes_the_ub_the_emulator_enforces_and_the_checker_agrees() -> None:
    """Three 68 KiB queues (204 KiB): more than a 910B2's UB, less than a 310P3's. The checker
    and the emulator agree on the bytes and on the verdict for each SoC."""
    task = get_task("add").with_shape((N,))
    prep = prepare("add_big", BIG_TILES)
    x, y = task.make_inputs(task.shapes)
    for soc, fits in (("Ascend910B2", False), ("Ascend310P3", True)):
        ev = Evaluator(task, soc, seeds=(0,), shape_sets=[list(task.shapes)])
        reason = ev.feasible(prep, {})
        art = ev.build(prep, {})  # bypass the checker: the emulator must refuse on its own
        res = _run(ev.backend, art, [x, y], (N,), prep.values({}))
        if fits:
            assert reason is None and res.ok, (reason, res.message)
            assert torch.equal(res.outputs[0], x + y)
            out = ev.evaluate(prep, {})
            assert out.status == Status.OK and out.time_us and out.time_us > 0, out.message
        else:
            assert res.status == Status.CHECK_ERROR
            assert "UB over-allocation" in res.message and f"{192 * 1024} B available" in res.message
            assert reason and "UB budget exceeded" in reason
            checker = int(re.search(r"needs (\d+) B", reason).group(1))
            emulator = int(re.search(r"(\d+) B needed", res.message).group(1))
            assert checker == emulator == 3 * 17408 * 4
            assert ev.evaluate(prep, {}).status == Status.INFEASIBLE


def test_launches_run_in_order_on_shared_gm_with_workspaces() -> None:
    """The split-K matmul: the cube launch writes the fp32 workspace, the vector launch sums it
    into the output; the result matches torch."""
    task = get_task("matmul").with_shape((64, 48))
    cand = next(c for c in propose_cube(task) if c.name.endswith("splitk_vec"))
    prep = prepare(cand.name, cand.source)
    kernel = prep.lower({})
    assert [launch.core for launch in kernel.launches] == ["aic", "aiv"] and kernel.workspaces
    backend = EmulatorBackend("Ascend910B2")
    art = backend.build(kernel)
    a, b = (torch.randn(100, 77).half(), torch.randn(77, 90).half())
    res = backend.run(art, [a, b], [((100, 90), torch.float16)], tiling=TilingArgs(prep.values({})),
                      timeout_s=60)
    assert res.ok, res.message
    want = (a.float() @ b.float()).half()
    assert res.outputs[0].dtype == torch.float16
    assert torch.allclose(res.outputs[0].float(), want.float(), atol=1e-2, rtol=1e-2)
    t = backend.time(art, [((100, 77), torch.float16), ((77, 90), torch.float16)],
                     [((100, 90), torch.float16)], tiling=TilingArgs(prep.values({})), timeout_s=120)
    assert t.kind == "modeled" and t.fields["model_version"] == ascendcraft.model.MODEL_VERSION
    assert set(t.fields["stages_us"]) == {"cube", "vec"}
    assert t.us == pytest.approx(sum(t.fields["stages_us"].values()))
    assert set(t.fields["block_dim"]) == {"cube", "vec"}
    assert all(k.split(".")[0] in ("cube", "vec") for k in t.fields["pipes"])


def test_builds_are_cached_by_source_hash(monkeypatch) -> None:
    prep = prepare("add_big", BIG_TILES)
    calls = []
    real = emulator_backend.build_kernel

    def counting(sources, main, **kw):
        calls.append(main)
        return real(sources, main, **kw)

    monkeypatch.setattr(emulator_backend, "build_kernel", counting)
    backend = EmulatorBackend()
    first = backend.build(prep.lower({}))
    again = backend.build(prep.lower({}))
    retuned = backend.build(prep.lower({"TILE": 1024}))  # tunables are runtime data here
    other = backend.build(prepare("add_big2", BIG_TILES.replace("add_big", "add_big2")).lower({}))
    assert first.key == again.key == retuned.key and first.files == again.files
    assert other.key != first.key and all(isinstance(f, Path) and f.exists() for f in other.files)
    assert calls == ["add_big_custom.cpp", "add_big2_custom.cpp"]  # one build_kernel call per source


def _broken_kernel(text: str) -> Kernel:
    launch = Launch("broken", "aiv", text, text, text, ("x", "y"))
    return Kernel("broken", None, (launch,), "#pragma once\n", "broken_tiling.h")


def test_build_failures_are_build_error_status(monkeypatch, tmp_path) -> None:
    backend = EmulatorBackend()
    with pytest.raises(BackendError) as e:
        backend.build(_broken_kernel("this is not C++;\n"))
    assert e.value.status == Status.BUILD_ERROR and "broken.cpp" in str(e.value)
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    monkeypatch.setenv("ASCENDCRAFT_CACHE", str(tmp_path))  # nothing cached: the compiler is needed
    with pytest.raises(BackendError) as e:
        backend.build(_broken_kernel("int main() { return 0; }\n"))
    assert e.value.status == Status.BUILD_ERROR and "no-such-compiler-xyz" in str(e.value)
    with pytest.raises(BackendError, match="has no launches"):
        backend.build(Kernel("empty", None, (), "", "empty_tiling.h"))


def test_trace_limit_is_a_status_of_the_timing(monkeypatch) -> None:
    task = get_task("add").with_shape((N,))
    prep = prepare("add_big", BIG_TILES)
    ev = Evaluator(task, "Ascend310P3", seeds=(0,), shape_sets=[list(task.shapes)])
    art = ev.build(prep, {})
    spec = [((N,), torch.float32)]
    monkeypatch.setenv("ASCENDCRAFT_MAX_TRACE_RECORDS", "5")
    with pytest.raises(BackendError) as e:
        ev.backend.time(art, spec * 2, spec, tiling=TilingArgs(prep.values({})), timeout_s=60)
    assert e.value.status == Status.TRACE_LIMIT and "trace-only run failed" in str(e.value)
    out = ev.evaluate(prep, {})  # a correct kernel whose timing failed says why
    assert out.status == Status.OK and out.time_us is None
    assert out.timing_status == Status.TRACE_LIMIT and "trace" in out.timing["error"]


def test_bool_outputs_left_unwritten_are_not_read_as_true() -> None:
    buf = emulator_backend._fresh(((4,), torch.bool))
    assert emulator_backend._to_torch(buf, (4,), torch.bool) is None
    buf[:] = [0, 1, 1, 0]
    assert emulator_backend._to_torch(buf, (4,), torch.bool).tolist() == [False, True, True, False]


def test_factory_names_what_is_missing_for_the_npu() -> None:
    assert isinstance(get_backend("emulator", "Ascend310P3"), Backend)
    assert get_backend("emulator", "Ascend310P3").soc.name == "Ascend310P3"
    with pytest.raises(BackendUnavailable, match="not available on this machine") as e:
        get_backend("npu")
    assert "torch_npu" in str(e.value) and "CANN" in str(e.value) and "emulator" in str(e.value)
    with pytest.raises(ValueError, match="unknown backend 'gpu'; known backends: emulator, npu"):
        get_backend("gpu")


def test_only_the_emulator_backend_writes_the_modeled_label() -> None:
    root = Path(ascendcraft.__file__).parent
    files = [root / "evaluate.py", *sorted((root / "backends").glob("*.py"))]
    offenders = [f.name for f in files if f.name != "emulator.py" and re.search(r"[\"']modeled[\"']", f.read_text())]
    assert not offenders


@pytest.mark.slow
def test_cli_soc_flag_sets_the_enforced_ub(tmp_path) -> None:
    """`ascendcraft check --soc`: the same program (only the 204 KiB tiling allowed) is refused
    for the 910B2 and checked, timed and correct on the 310P3."""
    dsl = tmp_path / "add_big.dsl"
    dsl.write_text(BIG_TILES.replace("choice(1024, 17408)", "choice(17408)"))
    got = {}
    for soc in ("Ascend910B2", "Ascend310P3"):
        r = subprocess.run([sys.executable, "-m", "ascendcraft.cli", "check", "--op", "add", "--shape",
                            str(N), "--dsl", str(dsl), "--soc", soc, "--json"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode in (0, 1), r.stderr
        got[soc] = json.loads(r.stdout)["candidates"][0]
    assert got["Ascend910B2"]["status"] == "infeasible" and "UB budget exceeded" in got["Ascend910B2"]["message"]
    ok = got["Ascend310P3"]
    assert ok["status"] == "ok" and ok["correct"] and ok["modeled_us"] > 0 and ok["params"]["TILE"] == 17408


def test_a_hand_given_tunable_outside_its_domain_is_infeasible_with_its_reason() -> None:
    """The tuner samples inside each domain; params from a user, a library entry or a stand-in
    search must be held to the same domain before anything is built."""
    from ascendcraft.dsl.ir import Domain

    task = get_task("add").with_shape((4096,))
    prep = prepare("add_big", BIG_TILES)
    ev = Evaluator(task, "Ascend310P3", seeds=(0,), shape_sets=[list(task.shapes)])
    assert ev.feasible(prep, {"TILE": 1024}) is None
    reason = ev.feasible(prep, {"TILE": 2048})
    assert reason == "tunable TILE=2048 is not in its domain choice(1024, 17408)"
    assert ev.evaluate(prep, {"TILE": 2048}).status == Status.INFEASIBLE
    assert [v for v in range(0, 70) if Domain("pow2", (3, 64)).contains(v)] == [4, 8, 16, 32, 64]
    assert [v for v in range(0, 40) if Domain("span", (8, 32, 8)).contains(v)] == [8, 16, 24, 32]
