"""SoC specifications: hardware numbers as data (``socs/<name>.json``), each with its source.

The JSON files are the single place where hardware numbers live; this module only parses
them into a typed :class:`SocSpec` and derives the few quantities the model needs (the
small-transfer ramp of each data path, per-dtype vector peaks). The op -> instruction-class
table used by the timeline also lives here (:data:`OP_CLASS`), so that the cost of every
API call is decided in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ascendcraft.emulator.trace_format import DType, Op

DEFAULT_SOC = "Ascend910B2"

GIB = float(1 << 30)

# --------------------------------------------------------------------------------------
# op -> instruction class (the only place this mapping lives)
# --------------------------------------------------------------------------------------

#: Vector instruction class of each vector op; the class keys ``vector_cycles_per_repeat``.
OP_CLASS: dict[Op, str] = {
    Op.ADD: "two_input", Op.SUB: "two_input", Op.MUL: "two_input",
    Op.MAX: "two_input", Op.MIN: "two_input",
    Op.COMPARE: "two_input", Op.SELECT: "two_input", Op.AND: "two_input", Op.OR: "two_input",
    Op.DIV: "div",
    Op.ADDS: "one_input", Op.MULS: "one_input", Op.MAXS: "one_input", Op.MINS: "one_input",
    Op.COMPARE_SCALAR: "one_input",
    Op.ABS: "one_input", Op.RSQRT: "one_input", Op.RECIPROCAL: "one_input",
    Op.RELU: "one_input", Op.LEAKY_RELU: "one_input", Op.DUPLICATE: "one_input",
    Op.CAST: "one_input", Op.NOT: "one_input",
    Op.EXP: "transcendental", Op.LN: "transcendental", Op.SQRT: "transcendental",
    Op.MUL_ADD_DST: "fma", Op.AXPY: "fma",
    # ReduceX (high-level, multi-pass) approximated by the whole-repeat reduction cost.
    Op.REDUCE_SUM: "whole_reduce_sum", Op.WHOLE_REDUCE_SUM: "whole_reduce_sum",
    Op.REDUCE_MAX: "whole_reduce_maxmin", Op.REDUCE_MIN: "whole_reduce_maxmin",
    Op.WHOLE_REDUCE_MAX: "whole_reduce_maxmin", Op.WHOLE_REDUCE_MIN: "whole_reduce_maxmin",
    Op.BLOCK_REDUCE_SUM: "block_reduce", Op.BLOCK_REDUCE_MAX: "block_reduce",
    Op.BLOCK_REDUCE_MIN: "block_reduce",
    Op.DATA_COPY_UB2UB: "copy",
    Op.GATHER: "gather", Op.CREATE_VEC_INDEX: "one_input",
}

#: Data moves that go through a GM <-> on-chip path (and so through HBM), by path name.
GM_PATH: dict[Op, str] = {
    Op.DATA_COPY_GM2UB: "GM2UB", Op.DATA_COPY_PAD_GM2UB: "GM2UB",
    Op.DATA_COPY_UB2GM: "UB2GM", Op.DATA_COPY_PAD_UB2GM: "UB2GM",
    Op.DATA_COPY_GM2L1: "GM2L1", Op.FIXPIPE_L0C2GM: "L0C2GM",
}

#: On-chip moves costed at a fixed bytes/cycle rate.
LOCAL_PATH: dict[Op, str] = {Op.LOAD_DATA_L1_L0A: "L1L0A", Op.LOAD_DATA_L1_L0B: "L1L0B"}

#: Scalar-pipe API calls.
SCALAR_OPS = (Op.GET_VALUE, Op.SET_VALUE)

#: Element size in bytes per trace dtype.
DTYPE_BYTES: dict[int, int] = {
    DType.NONE: 1, DType.F32: 4, DType.F16: 2, DType.BF16: 2, DType.I32: 4, DType.I8: 1,
    DType.U8: 1, DType.I16: 2, DType.U16: 2, DType.I64: 8, DType.BOOL: 1, DType.U32: 4,
}


_MAC_KEY: dict[str | int, str] = {
    "float16": "f16", "fp16": "f16", "half": "f16", "f16": "f16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float32": "f32", "fp32": "f32", "float": "f32", "f32": "f32",
    "int8": "i8", "i8": "i8", "uint8": "i8",
    int(DType.F16): "f16", int(DType.BF16): "bf16", int(DType.F32): "f32", int(DType.I8): "i8",
    int(DType.U8): "i8",
}


def dtype_row(dtype: int) -> str:
    """Row of the per-repeat table used for a dtype: 32/64-bit types use the fp32 row."""
    return "f32" if DTYPE_BYTES.get(int(dtype), 2) >= 4 else "f16"


# --------------------------------------------------------------------------------------
# spec
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathSpec:
    """A GM <-> on-chip data path: time(bytes) = latency_ns + bytes / peak (bytes per ns)."""

    name: str
    latency_ns: float
    peak_bytes_per_ns: float
    source: str

    def time_ns(self, nbytes: float) -> float:
        """Unshared transfer time of one move on this path."""
        return self.latency_ns + nbytes / self.peak_bytes_per_ns


@dataclass(frozen=True)
class SocSpec:
    """Typed view of one ``socs/<name>.json``; ``sources`` maps every field to its citation."""

    name: str
    organisation: str
    cube_cores: int
    vector_cores: int
    clock_mhz: float
    vector_clock_mhz: float
    ub_kib: int
    ub_budget_kib: int
    l1_kib: int
    l0a_kib: int
    l0b_kib: int
    l0c_kib: int
    hbm_gib: float
    l2_mib: float
    hbm_gbps: float
    hbm_sustained_frac: float
    l2_gbps: float | None
    paths: dict[str, PathSpec]
    local_bytes_per_cycle: dict[str, float]
    vector_cycles_per_repeat: dict[str, dict[str, float]]
    vector_call_overhead_cycles: float
    issue_cycles: float
    scalar_access_cycles: float
    mmad_fixed_cycles: float
    mmad_macs_per_cycle_f16: float
    launch_base_us: float
    launch_per_block_us: float
    sync_all_us: float
    aligned32_factor: float
    unaligned_factor: float
    host_dispatch_us: float
    eager_matmul_fill_us: float
    eager_matmul_efficiency: float
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    mmad_macs_per_cycle: dict[str, float] = field(default_factory=dict, compare=False)

    # ---- derived quantities -----------------------------------------------------------
    @property
    def cycle_ns(self) -> float:
        """AI-core (cube / scalar / MTE) clock period in ns."""
        return 1e3 / self.clock_mhz

    @property
    def vector_cycle_ns(self) -> float:
        """Vector-unit clock period in ns."""
        return 1e3 / self.vector_clock_mhz

    @property
    def hbm_bytes_per_ns(self) -> float:
        """Peak chip HBM bandwidth (roofline) in bytes per ns (= GB/s / 1)."""
        return self.hbm_gbps

    def launch_us(self, block_dim: int) -> float:
        """Kernel launch overhead for ``block_dim`` blocks (grows with block dim)."""
        return self.launch_base_us + self.launch_per_block_us * max(1, int(block_dim))

    def vector_cycles(self, op: Op | int, dtype: int) -> float:
        """Cycles per 256 B repeat for a vector op in a dtype (the cited table)."""
        cls = OP_CLASS[Op(op)]
        return float(self.vector_cycles_per_repeat[cls][dtype_row(dtype)])

    def class_cycles(self, cls: str, dtype: str = "float32") -> float:
        """Cycles per 256 B repeat of an instruction class for a dtype name (the cited table)."""
        row = "f32" if dtype in ("float32", "fp32", "f32", "int32", "int64", "float64") else "f16"
        return float(self.vector_cycles_per_repeat[cls][row])

    def vector_peak_flops(self, dtype: str = "float32") -> float:
        """Chip vector peak in element-ops/s: all vector cores, one 256 B repeat per cycle."""
        elem = 4 if dtype in ("float32", "fp32", "f32", "int32") else 2
        best = min(min(row.values()) for row in self.vector_cycles_per_repeat.values())
        return self.vector_cores * self.vector_clock_mhz * 1e6 * (256 / elem) / best

    def macs_per_cycle(self, dtype: str | int = "float16") -> float:
        """Cube MACs per cycle for an input dtype (name or trace DType), the spec's
        ``macs_per_cycle``: 4096 fp16/bf16, 1024 fp32, 8192 int8 on 910B."""
        key = _MAC_KEY.get(dtype if isinstance(dtype, str) else int(dtype), "f16")
        if key in self.mmad_macs_per_cycle:
            return float(self.mmad_macs_per_cycle[key])
        return self.mmad_macs_per_cycle_f16 * {"i8": 2.0, "f32": 0.5}.get(key, 1.0)

    def cube_peak_flops(self, dtype: str = "float16") -> float:
        """Chip cube peak in flop/s: cube cores x MACs/cycle(dtype) x 2 x clock."""
        return self.cube_cores * self.macs_per_cycle(dtype) * 2 * self.clock_mhz * 1e6


def _val(d: dict[str, Any], key: str, sources: dict[str, str]) -> Any:
    entry = d[key]
    if not isinstance(entry, dict) or "source" not in entry:
        raise ValueError(f"SoC spec field {key!r} has no 'source'")
    sources[key] = entry["source"]
    return entry["value"] if "value" in entry else entry


def _build(raw: dict[str, Any]) -> SocSpec:
    src: dict[str, str] = {}
    g = {k: _val(raw, k, src) for k in raw if k not in ("name", "paths")}
    paths: dict[str, PathSpec] = {}
    local: dict[str, float] = {}
    for pname, p in raw["paths"].items():
        if "source" not in p:
            raise ValueError(f"SoC spec path {pname!r} has no 'source'")
        src[f"paths.{pname}"] = p["source"]
        if "bytes_per_cycle" in p:
            local[pname] = float(p["bytes_per_cycle"])
            continue
        peak = p["peak_gibps"] * GIB / 1e9  # bytes per ns
        small = p["small_gibps"] * GIB / 1e9
        nb = float(p["small_bytes"])
        latency = max(0.0, nb / small - nb / peak)
        paths[pname] = PathSpec(pname, latency, peak, p["source"])
    mm, la, al, em = g["mmad"], g["launch"], g["align"], g["eager_matmul"]
    return SocSpec(
        name=raw["name"], organisation=g["organisation"],
        cube_cores=int(g["cube_cores"]), vector_cores=int(g["vector_cores"]),
        clock_mhz=float(g["clock_mhz"]), vector_clock_mhz=float(g["vector_clock_mhz"]),
        ub_kib=int(g["ub_kib"]), ub_budget_kib=int(g["ub_budget_kib"]), l1_kib=int(g["l1_kib"]),
        l0a_kib=int(g["l0a_kib"]), l0b_kib=int(g["l0b_kib"]), l0c_kib=int(g["l0c_kib"]),
        hbm_gib=float(g["hbm_gib"]), l2_mib=float(g["l2_mib"]), hbm_gbps=float(g["hbm_gbps"]),
        hbm_sustained_frac=float(g["hbm_sustained_frac"]), l2_gbps=g["l2_gbps"],
        paths=paths, local_bytes_per_cycle=local,
        vector_cycles_per_repeat=g["vector_cycles_per_repeat"],
        vector_call_overhead_cycles=float(g["vector_call_overhead_cycles"]),
        issue_cycles=float(g["issue_cycles"]), scalar_access_cycles=float(g["scalar_access_cycles"]),
        mmad_fixed_cycles=float(mm["fixed_cycles"]), mmad_macs_per_cycle_f16=float(mm["macs_per_cycle_f16"]),
        launch_base_us=float(la["base_us"]), launch_per_block_us=float(la["per_block_us"]),
        sync_all_us=float(g["sync_all_us"]),
        aligned32_factor=float(al["aligned32_factor"]), unaligned_factor=float(al["unaligned_factor"]),
        host_dispatch_us=float(g["host_dispatch_us"]),
        eager_matmul_fill_us=float(em["fill_us"]), eager_matmul_efficiency=float(em["efficiency"]),
        sources=src,
        mmad_macs_per_cycle={k: float(v) for k, v in mm.get("macs_per_cycle", {}).items()},
    )


def list_socs() -> list[str]:
    """Names of the SoCs that have a spec file, sorted."""
    d = resources.files("ascendcraft.model") / "socs"
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".json"))


_CACHE: dict[str, SocSpec] = {}


def load_soc(name: str | SocSpec | None = None) -> SocSpec:
    """Load a SoC spec by name (default :data:`DEFAULT_SOC`); unknown names raise ValueError."""
    if isinstance(name, SocSpec):
        return name
    name = name or DEFAULT_SOC
    if name not in _CACHE:
        known = list_socs()
        if name not in known:
            raise ValueError(f"unknown SoC {name!r}; known SoCs: {', '.join(known)}")
        f = resources.files("ascendcraft.model") / "socs" / f"{name}.json"
        _CACHE[name] = _build(json.loads(f.read_text()))
    return _CACHE[name]
