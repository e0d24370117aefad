"""Export a run in the T4 open auto-tuning results format (as written by Kernel Tuner).

T4 lets results be compared and replayed by other tuners/tools.  ``results_t4.json`` holds
``{"schema_version", "results": [...]}`` with one entry per evaluated or rejected
configuration; ``metadata_t4.json`` holds ``{"schema_version", "metadata": {...}}``.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..status import Status
from .space import Candidate

SCHEMA_VERSION = "1.0.0"

#: our status -> T4 ``invalidity``; an interrupted trial is no configuration of its own
#: (its re-run is), so it is not exported
INVALIDITY = {
    Status.OK: "correct",
    Status.INFEASIBLE: "constraints",
    Status.DSL_ERROR: "compile",
    Status.BUILD_ERROR: "compile",
    Status.CHECK_ERROR: "compile",
    Status.WRONG: "correctness",
    Status.TIMEOUT: "timeout",
    Status.CRASH: "runtime",
    Status.TRACE_LIMIT: "runtime",
}
INVALIDITY_VALUES = ("timeout", "compile", "runtime", "correctness", "constraints", "correct")

#: the structure of a results file (T4 1.0.0 results schema), used by tests to validate
RESULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema_version", "results"],
    "properties": {
        "schema_version": {"type": "string", "pattern": r"^[0-9]{1,}.[0-9]{1,}.[0-9]{1,}$"},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "timestamp": {"type": "string"},
                    "configuration": {"type": "object"},
                    "objectives": {"type": "array"},
                    "times": {
                        "type": "object",
                        "properties": {
                            "compilation_time": {"type": "number"},
                            "runtimes": {"type": "array"},
                            "framework": {"type": "number"},
                            "search_algorithm": {"type": "number"},
                            "validation": {"type": "number"},
                        },
                    },
                    "invalidity": {"enum": list(INVALIDITY_VALUES)},
                    "correctness": {"type": "number"},
                    "measurements": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "value": {"type": ["number", "string", "array"]},
                                "unit": {"type": "string"},
                            },
                        },
                    },
                },
                "required": ["configuration", "times", "invalidity", "correctness"],
            },
        },
    },
}


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def t4_results(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """T4 results from trial rows (:func:`ascendcraft.search.report.collect_rows`).

    Duplicates and interrupted trials are not configurations of their own and are skipped.
    Times are in seconds except ``runtimes`` (microseconds, the kernel time measured or
    modeled) — the unit is also given in ``measurements``.
    """
    results = []
    for r in rows:
        status = r.get("status")
        if status not in INVALIDITY or r.get("duplicate_of") is not None:
            continue
        metrics = r.get("metrics") or {}
        config: dict[str, Any] = {"candidate": r["candidate"], **(r.get("params") or {})}
        times: dict[str, Any] = {
            "runtimes": [float(r["time_us"])] if status == "ok" and r.get("time_us") is not None else [],
            "framework": float(r.get("wall_s") or 0.0) - float(r.get("eval_s") or 0.0),
        }
        for src, dst in (("compile_s", "compilation_time"), ("validation_s", "validation")):
            if _num(metrics.get(src)) is not None:
                times[dst] = float(metrics[src])
        if _num(r.get("eval_s")) is not None:
            times["benchmark"] = float(r["eval_s"])
        times["framework"] = max(0.0, times["framework"])
        measurements = []
        if status == "ok" and r.get("time_us") is not None:
            measurements.append({"name": "time", "value": float(r["time_us"]), "unit": "us"})
        for k, v in metrics.items():
            if _num(v) is not None:
                measurements.append({"name": str(k), "value": float(v),
                                     "unit": "us" if str(k).endswith("_us") else ""})
        if r.get("timing"):
            measurements.append({"name": "timing", "value": str(r["timing"]), "unit": ""})
        if status != "ok" and r.get("message"):
            measurements.append({"name": "message", "value": str(r["message"])[:500], "unit": ""})
        results.append({
            "timestamp": r.get("datetime_complete") or r.get("datetime_start") or "",
            "configuration": config,
            "times": times,
            "invalidity": INVALIDITY[status],
            "correctness": 0 if status == "wrong" else 1,
            "measurements": measurements,
            "objectives": ["time"],
        })
    return {"schema_version": SCHEMA_VERSION, "results": results}


def _pkg_versions(names: Sequence[str]) -> list[str]:
    out = []
    for n in names:
        try:
            out.append(f"{n}=={version(n)}")
        except PackageNotFoundError:
            pass
    return out


def t4_metadata(candidates: Sequence[Candidate]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "metadata": {
            "hardware": {
                "operating_system": f"{platform.system()} {platform.release()}",
                "hardware_description": [{"machine": platform.machine(), "node": platform.node(),
                                          "processor": platform.processor()}],
            },
            "environment": {
                "device_query": {},
                "requirements": _pkg_versions(["ascendcraft", "optuna", "ray", "numpy", "torch"]),
            },
            "tune_params": {
                c.name: {t.name: list(t.ordered()) for t in c.tunables} for c in candidates
            },
        },
    }


def write_t4(run_dir: Path, rows: Sequence[dict[str, Any]], candidates: Sequence[Candidate]) -> tuple[Path, Path]:
    """Write ``results_t4.json`` and ``metadata_t4.json`` into the run dir."""
    res, meta = run_dir / "results_t4.json", run_dir / "metadata_t4.json"
    res.write_text(json.dumps(t4_results(rows), indent=1))
    meta.write_text(json.dumps(t4_metadata(candidates), indent=1))
    return res, meta
