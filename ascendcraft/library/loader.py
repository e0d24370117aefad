"""``ascendcraft.library.load(DIR)``: a library's kernels as Python functions on torch tensors.

``lib = load("mylib"); y = lib.relu(x)`` picks, among the entries of ``relu`` with the
inputs' dtype and ranks, the one tuned at the nearest shape (the sum over every dimension of
``|log(d / d_tuned)|``) that can run at this shape (capacities, alignment and shape rules are
checked before anything is built), builds it once, and runs it: on the NPU through torch_npu
when this machine has one (the npu backend), otherwise in the CPU emulator. When no entry
fits, or the kernel fails at run time, the op's PyTorch reference computes the result, and
``lib.relu.last`` says which entry ran or why none did. Entries whose files do not match
their hashes are not used (``lib.problems`` lists them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from ascendcraft.backends import (
    TORCH_OF_DSL,
    Artifact,
    Backend,
    BackendError,
    TilingArgs,
    get_backend,
)
from ascendcraft.backends.npu_env import npu_missing
from ascendcraft.dsl.kernel import Kernel, Prepared

from .entry import DSL_FILE, ENTRY_JSON, kernel_of
from .runs import task_at
from .store import LibraryError, open_library, sha256_file

DSL_OF_TORCH = {v: k for k, v in TORCH_OF_DSL.items()}
RUN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Dispatch:
    """What one call did: the entry that ran (None: the reference ran) and why."""

    entry: str | None
    backend: str
    reason: str


@dataclass
class _Entry:
    id: str
    data: dict[str, Any]
    source: str
    prep: Prepared | None = None
    kernel: Kernel | None = None
    artifact: Artifact | None = None

    @cached_property
    def input_dtypes(self) -> list[str | None]:
        """The DSL dtypes of the tensor inputs the entry was tuned with."""
        task = task_at(self.data["op"], [tuple(s) for s in self.data["shapes"]], self.data["dtype"])
        return [DSL_OF_TORCH.get(s.dtype) for s in task.tensor_inputs]

    def distance(self, shapes: list[tuple[int, ...]]) -> float:
        return sum(abs(math.log(max(d, 1) / max(e, 1)))
                   for s, t in zip(shapes, self.data["shapes"], strict=True) for d, e in zip(s, t, strict=True))


class LibraryOp:
    """One op of the library, called like the op's PyTorch reference."""

    def __init__(self, lib: KernelLibrary, op: str, entries: list[_Entry]) -> None:
        self.lib, self.op, self.entries = lib, op, entries
        first = entries[0].data
        self.task = task_at(op, [tuple(s) for s in first["shapes"]], first["dtype"])
        self.last: Dispatch | None = None

    def __repr__(self) -> str:
        return f"<library op {self.op}: {len(self.entries)} entries>"

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.task.inputs):
            raise TypeError(f"{self.op} takes {len(self.task.inputs)} arguments "
                            f"({', '.join(s.name for s in self.task.inputs)}), got {len(args)}")
        outs, self.last = self._run(list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run(self, args: list[Any]) -> tuple[list[torch.Tensor], Dispatch]:
        shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else () for a in args]
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        scalars = tuple(float(a) for a in args if not isinstance(a, torch.Tensor))
        reasons: list[str] = []
        for e in self._candidates(args, shapes, reasons):
            try:
                be = self.lib.backend_for(e.data["soc"])
                specs = [(tuple(s), dt) for s, dt in self.task.output_meta(shapes)]
                dims = [list(t.shape) for t in tensors] + [list(s) for s, _ in specs]
                if e.prep is None:
                    e.prep, e.kernel = kernel_of(e.source, e.data["candidate"], e.data["params"])
                why = e.prep.feasible(dims, dict(e.data["params"]), be.soc)
                if why is not None:
                    reasons.append(f"{e.id}: {why}")
                    continue
                if e.artifact is None:
                    e.artifact = be.build(e.kernel)
                values = e.prep.values(e.data["params"])
                res = be.run(e.artifact, [t.detach() for t in tensors], specs,
                             tiling=TilingArgs(values, scalars), timeout_s=RUN_TIMEOUT_S)
            except (BackendError, LibraryError) as err:
                reasons.append(f"{e.id}: {err}")
                continue
            if res.ok:
                device = tensors[0].device if tensors else torch.device("cpu")
                return [o.to(device) for o in res.outputs], Dispatch(e.id, be.name, "nearest tuned shape")
            reasons.append(f"{e.id}: {res.status.value}: {res.message}")
        outs = self.task.run_reference(args)
        return outs, Dispatch(None, "reference", "; ".join(reasons) or "no entry")

    def _candidates(self, args: list[Any], shapes: list[tuple[int, ...]], reasons: list[str]) -> list[_Entry]:
        dtypes = [DSL_OF_TORCH.get(a.dtype) for a in args if isinstance(a, torch.Tensor)]
        out = []
        for e in self.entries:
            want = [len(s) for s in e.data["shapes"]]
            if [len(s) for s in shapes] != want:
                reasons.append(f"{e.id}: ranks {[len(s) for s in shapes]} differ from the entry's {want}")
                continue
            if dtypes != e.input_dtypes:
                reasons.append(f"{e.id}: inputs are {dtypes}, the entry takes {e.input_dtypes}")
                continue
            if not self.lib.usable_soc(e.data["soc"]):
                reasons.append(f"{e.id}: tuned for {e.data['soc']}, the device is {self.lib.device_soc}")
                continue
            out.append(e)
        return sorted(out, key=lambda e: e.distance(shapes))


class KernelLibrary:
    """The kernels of one library version, by op name (``lib.relu``, ``lib["relu"]``)."""

    def __init__(self, root: Path, version: str, entries: list[_Entry], problems: list[str],
                 backend: str, soc: str | None) -> None:
        self.root, self.version, self.problems = root, version, problems
        self.backend_name, self.device_soc = backend, soc
        self._backends: dict[str, Backend] = {}
        by_op: dict[str, list[_Entry]] = {}
        for e in entries:
            by_op.setdefault(e.data["op"], []).append(e)
        self.ops = {op: LibraryOp(self, op, es) for op, es in sorted(by_op.items())}

    def __getattr__(self, name: str) -> LibraryOp:
        ops = self.__dict__.get("ops", {})
        if name in ops:
            return ops[name]
        raise AttributeError(f"library {self.__dict__.get('root')} has no op {name!r} "
                             f"(it has: {', '.join(ops) or 'none'})")

    def __getitem__(self, name: str) -> LibraryOp:
        return getattr(self, name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.ops]

    def usable_soc(self, soc: str) -> bool:
        """The emulator runs any SoC; an NPU only its own."""
        return self.backend_name != "npu" or soc == self.device_soc

    def backend_for(self, soc: str) -> Backend:
        key = self.device_soc if self.backend_name == "npu" else soc
        if key not in self._backends:
            self._backends[key] = get_backend(self.backend_name, key)
        return self._backends[key]


def load(root: str | Path, version: str | None = None, *, backend: str | None = None,
         soc: str | None = None) -> KernelLibrary:
    """The library in ``root`` at ``version`` (default: latest). ``backend``: "npu",
    "emulator", or None (the NPU when this machine has everything it needs, otherwise the
    emulator). ``soc``: only entries of this SoC (default: all on the emulator, the device's
    on the NPU)."""
    lib = open_library(root)
    manifest = lib.manifest(version)
    base = lib.path(manifest["version"])
    if backend is None:
        backend = "emulator" if npu_missing() else "npu"
    if backend == "npu" and soc is None:
        from ascendcraft.backends.npu_env import find_devices

        soc = find_devices().soc
    entries, problems = [], []
    for eid, summary in sorted(manifest["entries"].items()):
        if soc is not None and summary["soc"] != soc:
            continue
        folder = base / summary["path"]
        try:
            if sha256_file(folder / ENTRY_JSON) != summary["sha256"]:
                raise LibraryError(f"{ENTRY_JSON} does not match the manifest's hash")
            data = json.loads((folder / ENTRY_JSON).read_text())
            if sha256_file(folder / DSL_FILE) != data["files"][DSL_FILE]:
                raise LibraryError(f"{DSL_FILE} does not match its hash")
            entries.append(_Entry(eid, data, (folder / DSL_FILE).read_text()))
        except (OSError, ValueError, KeyError, LibraryError) as e:
            problems.append(f"{eid}: not used: {e}")
    return KernelLibrary(lib.root, manifest["version"], entries, problems, backend, soc)
