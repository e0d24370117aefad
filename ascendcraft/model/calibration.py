"""Calibration of the model against public measurements (``calibration.json``).

Each row names a public figure and how the model computes the same quantity - through the
same code paths every modeled result uses (``simulate`` on a trace, the SoC spec's paths,
the eager baseline). ``evaluate()`` gives model value and relative error per row;
``python -m ascendcraft.model.calibration`` prints the table kept in CALIBRATION.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch

from ascendcraft.emulator.trace_format import DType, Op
from ascendcraft.soc import DEFAULT_SOC, load_soc

from . import MODEL_VERSION
from .eager import eager_us
from .synth import TraceBuilder, concat, single_instr_trace
from .timeline import simulate


@dataclass
class Calibrated:
    """One row: the public figure, the model's value and the relative error."""

    row: dict[str, Any]
    model: float
    error: float
    tolerance: float

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.tolerance


def load_rows() -> dict[str, Any]:
    """The calibration data file (rows plus defaults)."""
    f = resources.files("ascendcraft.model") / "calibration.json"
    return json.loads(f.read_text())


def _copy_trace(tile: int, per_core: int, cores: int, aligned: bool = True,
                op: Op = Op.DATA_COPY_GM2UB) -> Any:
    """Every core copies ``per_core`` bytes GM->on-chip in ``tile``-byte DataCopy calls (one
    core's program built once and replicated; ``per_core`` keeps every core's alignment)."""
    b = TraceBuilder(0)
    base = 0 if aligned else 32 * 7 + 1
    dtype = DType.F16 if op == Op.DATA_COPY_GM2L1 else DType.F32
    for i in range(per_core // tile):
        b.copy_in(tile, base + i * tile, dtype, op=op)
    one = b.array()
    parts = []
    for c in range(cores):
        a = one.copy()
        a["core"] = c
        a["addr"] += c * per_core
        parts.append(a)
    return concat(parts)


def _vector_cycles(m: dict, soc) -> float:
    r = simulate(single_instr_trace(Op[m["op"]], DType[m["dtype"]], int(m["repeats"])), soc)
    return r.pipe_busy_us["V"] * 1e3 / soc.vector_cycle_ns


def _mmad_cycles(m: dict, soc) -> float:
    b = TraceBuilder(0)
    b.mmad(int(m["m"]), int(m["k"]), int(m["n"]), DType[m["dtype"]])
    return simulate(b.array(), soc).pipe_busy_us["M"] * 1e3 / soc.cycle_ns


def _path_gbps(m: dict, soc) -> float:
    nb = int(m["bytes"])
    return nb / soc.paths[m["path"]].time_ns(nb)


def _chip_copy_us(m: dict, soc) -> float:
    cores = int(m["cores"])
    return simulate(_copy_trace(int(m["tile"]), int(m["per_core"]), cores), soc, cores).time_us


def _unaligned_ratio(m: dict, soc) -> float:
    op = Op.DATA_COPY_GM2L1 if m["path"] == "GM2L1" else Op.DATA_COPY_GM2UB
    t = [simulate(_copy_trace(131072, 1 << 21, 1, aligned, op), soc, 1).kernel_us for aligned in (True, False)]
    return t[0] / t[1]


def _eager_mm_tflops(m: dict, soc) -> float:
    n, dt, calls = int(m["n"]), getattr(torch, m["dtype"]), int(m["calls"])

    def ref(a, b):
        for _ in range(calls):
            torch.mm(a, b)

    e = eager_us(ref, [((n, n), dt), ((n, n), dt)], soc)
    return calls * 2.0 * n ** 3 / (e.us * 1e-6) / 1e12


def _host_enqueue_us(m: dict, soc) -> float:
    n = int(m["n"])

    def chain(k):
        return lambda a, b: [torch.add(a, b) for _ in range(k)]

    meta = [((1024,), torch.float32)] * 2
    return (eager_us(chain(n + 1), meta, soc).us - eager_us(chain(1), meta, soc).us) / n


def _single_op_wall_us(m: dict, soc) -> float:
    e = eager_us(lambda a, b: a + b, [((int(m["elems"]),), torch.float32)] * 2, soc)
    return soc.host_dispatch_us + e.us


def _eager_bw_tbps(m: dict, soc) -> float:
    n, dt = int(m["elems"]), getattr(torch, m["dtype"])
    e = eager_us(getattr(torch, m["op"]), [((n,), dt)], soc)
    return 2 * n * torch.empty((), dtype=dt).element_size() / (e.us * 1e-6) / 1e12


_KINDS = {
    "vector_instr": _vector_cycles,
    "mmad": _mmad_cycles,
    "path_bw": _path_gbps,
    "local_bw": lambda m, soc: soc.local_bytes_per_cycle[m["path"]],
    "chip_copy": _chip_copy_us,
    "chip_copy_bw": lambda m, soc: int(m["per_core"]) * int(m["cores"]) / (_chip_copy_us(m, soc) * 1e-6) / 1e12,
    "unaligned_ratio": _unaligned_ratio,
    "eager_mm": _eager_mm_tflops,
    "host_enqueue": _host_enqueue_us,
    "single_op_wall": _single_op_wall_us,
    "eager_bw": _eager_bw_tbps,
}


def model_value(row: dict[str, Any], default_soc: str = DEFAULT_SOC) -> float:
    """What the model gives for the quantity a row measures (in the row's unit)."""
    m = row["model"]
    if m["kind"] not in _KINDS:
        raise ValueError(f"calibration row {row.get('id')!r}: unknown model kind {m['kind']!r}")
    return float(_KINDS[m["kind"]](m, load_soc(row.get("soc", default_soc))))


def evaluate() -> list[Calibrated]:
    """Every row through the model."""
    data = load_rows()
    tol = float(data.get("tolerance", 0.10))
    out = []
    for row in data["rows"]:
        v = model_value(row, data.get("default_soc", DEFAULT_SOC))
        out.append(Calibrated(row, v, v / float(row["value"]) - 1.0, float(row.get("tolerance", tol))))
    return out


def markdown(results: list[Calibrated]) -> str:
    """The calibration table (CALIBRATION.md's generated part)."""
    lines = [f"Model version {MODEL_VERSION}. Error = model / figure - 1; rows outside "
             f"±{results[0].tolerance:.0%} say why." if results else "",
             "", "| id | figure | public | model | error | source |", "|---|---|---|---|---|---|"]
    for c in results:
        mark = "" if c.within else " **outside**"
        lines.append(f"| {c.row['id']} | {c.row['figure']} | {c.row['value']:g} {c.row['unit']} | "
                     f"{c.model:.4g} {c.row['unit']} | {c.error:+.1%}{mark} | {c.row['source']} |")
    notes = [c for c in results if c.row.get("why_not")]
    if notes:
        lines += ["", "Notes on rows:", ""]
        lines += [f"- **{c.row['id']}** ({c.error:+.1%}): {c.row['why_not']}" for c in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(evaluate()), end="")
