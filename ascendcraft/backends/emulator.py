"""The emulator backend: kernels built with g++ against the AscendC emulator, run on the CPU,
and timed by the SoC performance model on the emulator's trace (so every time it gives is
labelled modeled, with the model's version).

Every launch of a ``Kernel`` runs in order on one set of GM buffers (the task's inputs, the
named workspaces, the task's outputs), each with its own core type and core count, and
every run enforces the SoC's buffer capacities (``Soc.buffer_bytes``). Timing runs every
launch trace-only at the full shapes (nothing is allocated) and adds the launches' modeled
times.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from ascendcraft.dsl.kernel import Kernel, Launch
from ascendcraft.emulator.build import BuildError, ToolchainError, build_kernel
from ascendcraft.emulator.runner import BatchRun, RunResult, run_batch, run_kernel
from ascendcraft.model import MODEL_VERSION
from ascendcraft.model.mixed import simulate_mixed
from ascendcraft.model.timeline import ModelResult, simulate
from ascendcraft.soc import Soc, load_soc
from ascendcraft.status import Status
from ascendcraft.tasks.compare import nan_filled_like

from .base import Artifact, BackendError, RunOutcome, TensorSpec, TilingArgs, Timing
from .gm_plan import GmPlan

KIND = "modeled"
"""``Timing.kind`` of every time this backend gives: the emulator does not measure."""

TRACE_TIMEOUT_FLOOR_S = 120.0
"""Trace-only runs at full shape take longer than correctness runs: at least this limit."""

CHILD_WALL_FACTOR = 8.0
"""A run's limit is on its child's CPU time; its wall clock is only a backstop, this many
times longer, so that a machine busy with other work does not turn runs into timeouts."""

BATCH_BYTES = 256 << 20
"""GM bytes of the runs one :meth:`EmulatorBackend.run_many` request holds at most (more
runs are split over several requests): batching saves round trips, not memory."""

BUILD_CACHE_SIZE = 256
"""Built artifacts remembered in memory per backend (the on-disk cache keeps every build)."""

#: The emulator runner's status words -> the one vocabulary.
RUNNER_STATUS: dict[str, Status] = {
    "ok": Status.OK, "error": Status.CHECK_ERROR, "crash": Status.CRASH,
    "timeout": Status.TIMEOUT, "trace_limit": Status.TRACE_LIMIT,
}

_BOOL_POISON = 0xFF  # a byte that is neither False nor True: shows unwritten bool outputs


class EmulatorBackend:
    """Build, run and time kernels in the CPU emulator of one SoC."""

    name = "emulator"
    trial_resources: Mapping[str, float] = MappingProxyType({})  # any node's CPUs will do

    def __init__(self, soc: Soc | str | None = None) -> None:
        self.soc = load_soc(soc)
        self._built: OrderedDict[str, tuple[Path, ...]] = OrderedDict()

    # ------------------------------------------------------------------ build
    def build(self, kernel: Kernel) -> Artifact:
        if not kernel.launches:
            raise BackendError(Status.BUILD_ERROR, f"kernel {kernel.op!r} has no launches")
        units = [kernel.emulator_sources(launch) for launch in kernel.launches]
        key = _source_hash(units)
        files = self._built.get(key)
        if files is None:
            try:
                files = tuple(build_kernel(sources, main) for sources, main in units)
            except (BuildError, ToolchainError) as e:
                status = Status.TIMEOUT if getattr(e, "timed_out", False) else Status.BUILD_ERROR
                raise BackendError(status, str(e)) from e
            self._built[key] = files
            while len(self._built) > BUILD_CACHE_SIZE:
                self._built.popitem(last=False)
        else:
            self._built.move_to_end(key)
        return Artifact(kernel, self.name, key, files)

    # ------------------------------------------------------------------ run
    def run(self, artifact: Artifact, inputs: Sequence[torch.Tensor], outputs: Sequence[TensorSpec],
            *, tiling: TilingArgs, timeout_s: float) -> RunOutcome:
        return self.run_many(artifact, [(inputs, outputs, tiling)], timeout_s=timeout_s)[0]

    def run_many(self, artifact: Artifact, cases: Sequence[RunCase], *, timeout_s: float) -> list[RunOutcome]:
        """:meth:`run` on each case, in order, with the runs of a launch batched into few
        fork-server requests (:func:`~ascendcraft.emulator.runner.run_batch`). Stops at the
        first case that fails: one outcome per case up to and including it."""
        t0 = time.perf_counter()
        k = artifact.kernel
        plans, states = [], []
        for inputs, outputs, tiling in cases:
            gm = GmPlan(k, [(tuple(t.shape), t.dtype) for t in inputs], outputs, tiling, self.soc)
            state: dict[str, Any] = {p.name: _to_numpy(t) for p, t in zip(k.program.inputs, inputs, strict=True)}
            state.update({p.name: _fresh(spec) for p, spec in zip(k.program.outputs, outputs, strict=True)})
            state.update({w.name: _fresh(((n // _itemsize(d),), d)) for w, n, d in gm.workspaces})
            plans.append(gm)
            states.append(state)
        n_ok = len(cases)  # cases before the first failure
        failure: RunOutcome | None = None
        for launch, so in zip(k.launches, artifact.files, strict=True):
            runs, names = [], []
            for gm, state in zip(plans[:n_ok], states[:n_ok], strict=True):
                ins, rest = gm.split(launch)
                runs.append(BatchRun([state[n] for n in ins], [state[n] for n in rest], gm.request(launch)))
                names.append(rest)
            results: list[RunResult] = []
            for chunk in _chunks(runs, BATCH_BYTES):
                results += run_batch(so, chunk, timeout_s=timeout_s, wall_timeout_s=timeout_s * CHILD_WALL_FACTOR,
                                     soc_buffers=self.soc, core_type=launch.core)
                if not results[-1].ok:
                    break
            for i, (res, rest) in enumerate(zip(results, names, strict=False)):
                if res.ok:
                    states[i].update(zip(rest, res.outputs, strict=True))
                else:
                    n_ok = i
                    failure = RunOutcome(_status(res), plans[i].where(launch) + res.message,
                                         wall_s=time.perf_counter() - t0)
                    break
        out = []
        for state, (_, outputs, _) in zip(states[:n_ok], cases, strict=False):
            got = _outputs(k, state, outputs)
            if isinstance(got, str):
                return [*out, RunOutcome(Status.WRONG, got, wall_s=time.perf_counter() - t0)]
            out.append(RunOutcome(Status.OK, "", got, time.perf_counter() - t0))
        return out + ([failure] if failure is not None else [])

    # ------------------------------------------------------------------ time
    def time(self, artifact: Artifact, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             *, tiling: TilingArgs, timeout_s: float) -> Timing:
        t0 = time.perf_counter()
        k = artifact.kernel
        gm = GmPlan(k, inputs, outputs, tiling, self.soc)
        nbytes: dict[str, int] = {p.name: _nbytes(s) for p, s in zip(k.program.inputs, inputs, strict=True)}
        nbytes.update({p.name: _nbytes(s) for p, s in zip(k.program.outputs, outputs, strict=True)})
        nbytes.update({w.name: n for w, n, _ in gm.workspaces})
        labels = _labels(k.launches)
        results: dict[str, ModelResult] = {}
        records = 0
        for launch, so, label in zip(k.launches, artifact.files, labels, strict=True):
            ins, rest = gm.split(launch)
            res = run_kernel(so, [nbytes[n] for n in ins], outputs=[nbytes[n] for n in rest],
                             tiling=gm.request(launch), trace_only=True, trace=True,
                             timeout_s=max(timeout_s, TRACE_TIMEOUT_FLOOR_S), soc_buffers=self.soc,
                             wall_timeout_s=max(timeout_s, TRACE_TIMEOUT_FLOOR_S) * CHILD_WALL_FACTOR,
                             core_type=launch.core)
            if not res.ok or res.trace is None:
                raise BackendError(_status(res), f"{gm.where(launch)}trace-only run failed: {res.message}")
            results[label] = (simulate_mixed(res.trace, self.soc, res.block_dim) if launch.core == "mix"
                              else simulate(res.trace, self.soc, res.block_dim))
            records += len(res.trace)
            del res  # the trace can be gigabytes: gone before the next launch runs
        total = sum(r.time_us for r in results.values())
        main = max(results.values(), key=lambda r: r.time_us)
        single = len(results) == 1
        fields: dict[str, Any] = {
            "soc": self.soc.name,
            "model_version": MODEL_VERSION,
            "bound": main.bound,
            "pipes": ({p: round(u, 4) for p, u in main.pipe_util.items()} if single else
                      {f"{w}.{p}": round(u, 4) for w, r in results.items() for p, u in r.pipe_util.items() if u > 0}),
            "stages_us": {w: r.time_us for w, r in results.items()},
            "block_dim": main.block_dim if single else {w: r.block_dim for w, r in results.items()},
            "trace_records": records,
            "model_wall_s": time.perf_counter() - t0,
        }
        return Timing(KIND, total, fields)


# ---------------------------------------------------------------------------- helpers


RunCase = tuple[Sequence[torch.Tensor], Sequence[TensorSpec], TilingArgs]
"""One case of :meth:`EmulatorBackend.run_many`: input tensors, output specs, tiling args."""


def _outputs(k: Kernel, state: dict[str, Any], outputs: Sequence[TensorSpec]) -> list[torch.Tensor] | str:
    """The kernel's outputs from the GM state of a run as tensors, or why one is invalid."""
    got = []
    for p, (shape, dtype) in zip(k.program.outputs, outputs, strict=True):
        tensor = _to_torch(state[p.name], shape, dtype)
        if tensor is None:
            return f"output '{p.name}' has bytes that are not a bool (0 or 1): elements left unwritten"
        got.append(tensor)
    return got


def _chunks(runs: list[BatchRun], max_bytes: int) -> list[list[BatchRun]]:
    """Consecutive groups of runs whose GM buffers together stay under ``max_bytes`` (a run
    larger than that is a group of its own)."""
    out: list[list[BatchRun]] = []
    size = 0
    for run in runs:
        nbytes = sum(a.nbytes for a in (*run.gm_arrays, *run.outputs))
        if not out or size + nbytes > max_bytes:
            out.append([])
            size = 0
        out[-1].append(run)
        size += nbytes
    return out


def _source_hash(units: Sequence[tuple[dict[str, str], str]]) -> str:
    h = hashlib.sha256()
    for sources, main in units:
        h.update(main.encode() + b"\0")
        for name in sorted(sources):
            h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    return h.hexdigest()[:24]


def _labels(launches: Sequence[Launch]) -> list[str]:
    """Stage labels in reports: "cube" (AIC), "vec" (AIV) and "mix" (AIC + AIV), numbered if one repeats."""
    base = [{"aic": "cube", "mix": "mix"}.get(launch.core, "vec") for launch in launches]
    return [b if base.count(b) == 1 else f"{b}{base[:i + 1].count(b)}" for i, b in enumerate(base)]


def _status(res: RunResult) -> Status:
    return RUNNER_STATUS.get(res.status, Status.CRASH)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _nbytes(spec: TensorSpec) -> int:
    shape, dtype = spec
    return int(np.prod(shape, dtype=np.int64)) * _itemsize(dtype)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's bytes as the emulator reads them (bf16 as uint16, bool as uint8)."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy()
    return t.numpy()


def _fresh(spec: TensorSpec) -> np.ndarray:
    """A poisoned buffer (NaN, the extreme integer, a non-bool byte) so unwritten elements show."""
    shape, dtype = spec
    if dtype == torch.bool:
        return np.full(tuple(shape), _BOOL_POISON, np.uint8)
    return _to_numpy(nan_filled_like((tuple(shape), dtype)))


def _to_torch(arr: np.ndarray, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor | None:
    """The emulator's bytes as a tensor of ``dtype``; None for a bool output holding a byte
    that is neither 0 nor 1."""
    arr = np.ascontiguousarray(arr).reshape(tuple(shape))
    if dtype == torch.bool:
        return None if bool((arr > 1).any()) else torch.from_numpy(arr.astype(np.bool_))
    t = torch.from_numpy(arr)
    return t.view(dtype) if t.dtype != dtype else t
