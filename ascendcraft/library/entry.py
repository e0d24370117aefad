"""One library entry (op × SoC × shape key): its files and its ``entry.json``.

An entry holds the winner's DSL (``kernel.dsl``), every output form the lowering renders for
its SoC (``forms/``: the CANN custom-op project, the direct-launch project, the torch
binding, the emulator sources), and ``entry.json``: the tunables, the tiling at the tuned
shapes, the correctness evidence (the run's, and the re-check at export), the timing with
its kind and model version, the toolchain and ascendcraft versions, and the sha256 of every
other file of the entry.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from typing import Any

from ascendcraft.dsl.kernel import Kernel, Prepared, prepare
from ascendcraft.dsl.parser import DslError
from ascendcraft.evaluate import Evaluator
from ascendcraft.soc import load_soc
from ascendcraft.version import MODEL_VERSION, package_version

from .runs import TunedKernel, task_at
from .store import LibraryError, sha256_bytes

ENTRY_JSON = "entry.json"
DSL_FILE = "kernel.dsl"
FORMS = "forms"


def entry_dir(entry_id: str) -> str:
    """The entry's folder inside a version (``entries/relu/Ascend910B2/fp32-4096x32768``)."""
    return f"entries/{entry_id}"


def kernel_of(source: str, name: str, params: dict[str, int]) -> tuple[Prepared, Kernel]:
    """The DSL prepared and lowered with the tuned tunables (LibraryError when it no longer
    parses or lowers: an ascendcraft that cannot read its own library says so)."""
    try:
        prep = prepare(name, source)
        return prep, prep.lower(dict(params))
    except DslError as e:
        raise LibraryError(f"{name}: the DSL does not lower: {e}") from None


def render_files(source: str, name: str, params: dict[str, int], soc: str) -> dict[str, str]:
    """Every file of an entry but ``entry.json``: the DSL and the rendered forms."""
    _, kernel = kernel_of(source, name, params)
    files = {DSL_FILE: source}
    files.update({f"{FORMS}/{rel}": text for rel, text in sorted(kernel.render(soc).items())})
    return files


def recheck(op: str, shapes, dtype: str, soc: str, source: str, name: str,
            params: dict[str, int]) -> dict[str, Any]:
    """Correctness in the emulator now (reduced shapes, two seeds, task and signed inputs,
    each run twice): the evidence ``export`` records and ``verify`` repeats."""
    task = task_at(op, shapes, dtype)
    ev = Evaluator(task, soc)
    prep, _ = kernel_of(source, name, params)
    out = ev.evaluate(prep, params, timing=False)
    return {"status": out.status.value, "message": out.message, "correct": out.correct,
            "max_abs_err": out.max_abs_err, "max_rel_err": out.max_rel_err,
            "shapes": [[list(s) for s in ss] for ss in ev.shape_sets], "seeds": list(ev.seeds),
            "backend": ev.backend.name, "atol": task.tolerance.atol, "rtol": task.tolerance.rtol}


@lru_cache(maxsize=1)
def toolchain() -> dict[str, Any]:
    """The compilers that built and can build the entries: the emulator's C++ compiler and,
    when installed, CANN (by version)."""
    from ascendcraft.backends.npu_env import find_cann

    cxx = shutil.which("g++")
    version = None
    if cxx:
        try:
            version = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                                     timeout=30).stdout.splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            version = None
    cann = find_cann()
    return {"emulator_cxx": version, "cann": cann.version if cann.present else None}


def make_entry(tk: TunedKernel) -> tuple[dict[str, str], dict[str, Any]]:
    """(files, entry.json data) of one tuned kernel; LibraryError when the kernel is not
    correct any more."""
    load_soc(tk.soc)  # a SoC this ascendcraft knows
    files = render_files(tk.source, tk.candidate, tk.params, tk.soc)
    check = recheck(tk.op, tk.shapes, tk.dtype, tk.soc, tk.source, tk.candidate, tk.params)
    if not check["correct"]:
        raise LibraryError(f"{tk.run_dir}: the winner {tk.candidate} is not correct when re-checked "
                           f"at export ({check['status']}: {check['message']})")
    _, kernel = kernel_of(tk.source, tk.candidate, tk.params)
    dims = [list(s) for s, spec in zip(tk.shapes, tk.task().inputs, strict=True) if spec.is_tensor]
    dims += [list(s) for s, _ in tk.task().output_meta(list(tk.shapes))]
    m = tk.metrics
    data: dict[str, Any] = {
        "id": tk.entry_id, "op": tk.op, "soc": tk.soc, "dtype": tk.dtype,
        "shapes": [list(s) for s in tk.shapes], "shape_key": tk.shape_key,
        "candidate": tk.candidate, "params": dict(tk.params),
        "launches": [{"name": la.name, "core": la.core, "gm_args": list(la.gm_args)} for la in kernel.launches],
        "tiling": kernel.tiling(dims, load_soc(tk.soc)),
        "timing": {"kind": tk.timing_kind, "us": tk.time_us,
                   "model_version": m.get("model_version") if tk.timing_kind != "measured" else None,
                   "eager_us": m.get("eager_us"), "speedup": m.get("speedup"),
                   "roofline_frac": m.get("roofline_frac"), "bound": m.get("bound"),
                   "device": m.get("device")},
        "correctness": {"run": {"max_abs_err": m.get("max_abs_err"), "max_rel_err": m.get("max_rel_err"),
                                "revalidation": tk.revalidation},
                        "export": check},
        "source_run": {"run_dir": tk.run_dir.name, "study": tk.study, "trial": tk.trial_number,
                       "ascendcraft_version": tk.identity.get("ascendcraft_version"),
                       "model_version": tk.identity.get("model_version")},
        "versions": {"ascendcraft": package_version(), "model": MODEL_VERSION, "toolchain": toolchain()},
        "files": {rel: sha256_bytes(text.encode()) for rel, text in files.items()},
    }
    return files, data
