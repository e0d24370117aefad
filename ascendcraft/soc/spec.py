"""The SoC as one typed object: hardware numbers and capabilities read from ``data/<name>.json``.

The JSON files are the single place where hardware facts live, each with its source; this
module only parses one into a :class:`Soc` (refusing any number without a source) and
derives the few quantities everyone needs: buffer capacities in bytes, the small-transfer
ramp of each data path, per-dtype cube and vector peaks. What a kernel may use on a SoC
(DataCopyPad, bf16, split or coupled cube/vector cores, the CANN family it is built for) is
data too (:class:`Capabilities`), so a new SoC of a known family is one JSON file and no code
decides anything by a SoC's name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

DEFAULT_SOC = "Ascend910B2"

GIB = float(1 << 30)

#: Per-core buffers and the spec fields holding their size in KiB (``Soc.buffer_bytes`` keys).
BUFFERS: dict[str, str] = {"ub": "ub_kib", "l1": "l1_kib", "l0a": "l0a_kib", "l0b": "l0b_kib",
                           "l0c": "l0c_kib", "bt": "bt_kib"}

#: Kernel features a SoC may lack (``Capabilities.missing``).
FEATURES: tuple[str, ...] = ("data_copy_pad", "bf16")

ORGANISATIONS: tuple[str, ...] = ("split", "coupled")

_MAC_KEY: dict[str, str] = {
    "float16": "f16", "fp16": "f16", "half": "f16", "f16": "f16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float32": "f32", "fp32": "f32", "float": "f32", "f32": "f32",
    "int8": "i8", "i8": "i8", "uint8": "i8", "u8": "i8",
}


class SocError(ValueError):
    """A SoC name is unknown or its spec file is malformed; the message says which field."""


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
class Capabilities:
    """What kernels may use on a SoC; lowering, export and the backends read these, never
    the SoC's name."""

    cann_family: str  # CANN's family target (OpDef AddConfig), e.g. "ascend910b"
    split_cores: bool  # separate cube (AIC) and vector (AIV) cores, or coupled AI cores
    data_copy_pad: bool
    bf16: bool

    def missing(self, needs: Iterable[str]) -> list[str]:
        """The features of ``needs`` (names from :data:`FEATURES`) this SoC lacks."""
        out = []
        for need in needs:
            if need not in FEATURES:
                raise ValueError(f"unknown kernel feature {need!r}; known: {', '.join(FEATURES)}")
            if not getattr(self, need):
                out.append(need)
        return out


@dataclass(frozen=True)
class Soc:
    """Typed view of one ``data/<name>.json``; ``sources`` maps every field to its citation."""

    name: str
    organisation: str
    capabilities: Capabilities
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
    bt_kib: int
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
    def buffer_bytes(self) -> dict[str, int]:
        """Per-core buffer capacities in bytes (``ub``, ``l1``, ``l0a``, ``l0b``, ``l0c``, ``bt``):
        what the emulator enforces for this SoC."""
        return {buf: int(getattr(self, key)) * 1024 for buf, key in BUFFERS.items()}

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

    def class_cycles(self, cls: str, dtype: str = "float32") -> float:
        """Cycles per 256 B repeat of an instruction class for a dtype name (the cited table)."""
        row = "f32" if dtype in ("float32", "fp32", "f32", "int32", "int64", "float64") else "f16"
        return float(self.vector_cycles_per_repeat[cls][row])

    def vector_peak_flops(self, dtype: str = "float32") -> float:
        """Chip vector peak in element-ops/s: all vector cores, one 256 B repeat per cycle."""
        elem = 4 if dtype in ("float32", "fp32", "f32", "int32") else 2
        best = min(min(row.values()) for row in self.vector_cycles_per_repeat.values())
        return self.vector_cores * self.vector_clock_mhz * 1e6 * (256 / elem) / best

    def macs_per_cycle(self, dtype: str = "float16") -> float:
        """Cube MACs per cycle for an input dtype name (``float16``, ``bf16``, ``F32``...), the
        spec's ``macs_per_cycle``: 4096 fp16/bf16, 1024 fp32, 8192 int8 on 910B."""
        key = _MAC_KEY.get(str(dtype).lower().removeprefix("torch."), "f16")
        if key in self.mmad_macs_per_cycle:
            return float(self.mmad_macs_per_cycle[key])
        return self.mmad_macs_per_cycle_f16 * {"i8": 2.0, "f32": 0.5}.get(key, 1.0)

    def cube_peak_flops(self, dtype: str = "float16") -> float:
        """Chip cube peak in flop/s: cube cores x MACs/cycle(dtype) x 2 x clock."""
        return self.cube_cores * self.macs_per_cycle(dtype) * 2 * self.clock_mhz * 1e6


# ---------------------------------------------------------------------------- parsing


class _Fields:
    """Reads ``{"value": ..., "source": ...}`` entries, recording each source; a field that
    is missing or has no source is a :class:`SocError` naming the file and the field."""

    def __init__(self, raw: dict[str, Any], where: str) -> None:
        self.raw, self.where = raw, where
        self.sources: dict[str, str] = {}

    def entry(self, key: str) -> dict[str, Any]:
        entry = self.raw.get(key)
        if entry is None:
            raise SocError(f"{self.where}: field {key!r} is missing")
        if not isinstance(entry, dict) or not entry.get("source"):
            raise SocError(f"{self.where}: field {key!r} has no 'source'")
        self.sources[key] = entry["source"]
        return entry

    def value(self, key: str) -> Any:
        entry = self.entry(key)
        if "value" not in entry:
            raise SocError(f"{self.where}: field {key!r} has no 'value'")
        return entry["value"]

    def number(self, key: str, entry: dict[str, Any] | None = None, name: str | None = None) -> float:
        v = self.value(key) if entry is None else entry.get(name or "")
        label = key if entry is None else f"{key}.{name}"
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SocError(f"{self.where}: field {label!r} must be a number, not {v!r}")
        return float(v)


def _capabilities(f: _Fields, organisation: str) -> Capabilities:
    caps = f.entry("capabilities")
    family = caps.get("cann_family")
    if not isinstance(family, str) or not family.isidentifier():
        raise SocError(f"{f.where}: capabilities.cann_family must be a name like 'ascend910b', "
                       f"not {family!r}")
    flags = {}
    for feature in FEATURES:
        v = caps.get(feature)
        if not isinstance(v, bool):
            raise SocError(f"{f.where}: capabilities.{feature} must be true or false, not {v!r}")
        flags[feature] = v
    return Capabilities(family, organisation == "split", **flags)


def _paths(f: _Fields) -> tuple[dict[str, PathSpec], dict[str, float]]:
    raw = f.raw.get("paths")
    if not isinstance(raw, dict):
        raise SocError(f"{f.where}: field 'paths' is missing")
    paths: dict[str, PathSpec] = {}
    local: dict[str, float] = {}
    for pname, p in raw.items():
        if not isinstance(p, dict) or not p.get("source"):
            raise SocError(f"{f.where}: path {pname!r} has no 'source'")
        f.sources[f"paths.{pname}"] = p["source"]
        if "bytes_per_cycle" in p:
            local[pname] = f.number("paths", p, "bytes_per_cycle")
            continue
        peak = f.number("paths", p, "peak_gibps") * GIB / 1e9  # bytes per ns
        small = f.number("paths", p, "small_gibps") * GIB / 1e9
        nb = f.number("paths", p, "small_bytes")
        latency = max(0.0, nb / small - nb / peak)
        paths[pname] = PathSpec(pname, latency, peak, p["source"])
    return paths, local


def parse_soc(raw: dict[str, Any], where: str = "SoC spec") -> Soc:
    """Build a :class:`Soc` from the parsed JSON of one spec file (SocError if malformed)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise SocError(f"{where}: a SoC spec is a JSON object with a 'name'")
    f = _Fields(raw, where)
    org = f.value("organisation")
    if org not in ORGANISATIONS:
        raise SocError(f"{where}: organisation must be one of {', '.join(ORGANISATIONS)}, not {org!r}")
    paths, local = _paths(f)
    mm, la, al, em = (f.entry(k) for k in ("mmad", "launch", "align", "eager_matmul"))
    cycles = f.value("vector_cycles_per_repeat")
    if not isinstance(cycles, dict) or not all(
            isinstance(row, dict) and set(row) == {"f16", "f32"} for row in cycles.values()):
        raise SocError(f"{where}: vector_cycles_per_repeat maps each class to {{'f16': .., 'f32': ..}}")
    l2 = f.value("l2_gbps")
    return Soc(
        name=raw["name"], organisation=org, capabilities=_capabilities(f, org),
        cube_cores=int(f.number("cube_cores")), vector_cores=int(f.number("vector_cores")),
        clock_mhz=f.number("clock_mhz"), vector_clock_mhz=f.number("vector_clock_mhz"),
        ub_kib=int(f.number("ub_kib")), ub_budget_kib=int(f.number("ub_budget_kib")),
        l1_kib=int(f.number("l1_kib")), l0a_kib=int(f.number("l0a_kib")),
        l0b_kib=int(f.number("l0b_kib")), l0c_kib=int(f.number("l0c_kib")),
        bt_kib=int(f.number("bt_kib")),
        hbm_gib=f.number("hbm_gib"), l2_mib=f.number("l2_mib"), hbm_gbps=f.number("hbm_gbps"),
        hbm_sustained_frac=f.number("hbm_sustained_frac"),
        l2_gbps=None if l2 is None else f.number("l2_gbps"),
        paths=paths, local_bytes_per_cycle=local, vector_cycles_per_repeat=cycles,
        vector_call_overhead_cycles=f.number("vector_call_overhead_cycles"),
        issue_cycles=f.number("issue_cycles"), scalar_access_cycles=f.number("scalar_access_cycles"),
        mmad_fixed_cycles=f.number("mmad", mm, "fixed_cycles"),
        mmad_macs_per_cycle_f16=f.number("mmad", mm, "macs_per_cycle_f16"),
        launch_base_us=f.number("launch", la, "base_us"),
        launch_per_block_us=f.number("launch", la, "per_block_us"),
        sync_all_us=f.number("sync_all_us"),
        aligned32_factor=f.number("align", al, "aligned32_factor"),
        unaligned_factor=f.number("align", al, "unaligned_factor"),
        host_dispatch_us=f.number("host_dispatch_us"),
        eager_matmul_fill_us=f.number("eager_matmul", em, "fill_us"),
        eager_matmul_efficiency=f.number("eager_matmul", em, "efficiency"),
        sources=f.sources,
        mmad_macs_per_cycle={k: float(v) for k, v in mm.get("macs_per_cycle", {}).items()},
    )


# ---------------------------------------------------------------------------- loading


def _data_dir() -> Any:
    return resources.files("ascendcraft.soc") / "data"


def list_socs() -> list[str]:
    """Names of the SoCs that have a spec file, sorted."""
    return sorted(p.name[:-5] for p in _data_dir().iterdir() if p.name.endswith(".json"))


_CACHE: dict[str, Soc] = {}


def load_soc(name: str | Soc | None = None) -> Soc:
    """The SoC of that name (default :data:`DEFAULT_SOC`), parsed once per process; a
    :class:`Soc` is returned as is. Unknown names raise SocError listing the known ones."""
    if isinstance(name, Soc):
        return name
    name = name or DEFAULT_SOC
    if name not in _CACHE:
        known = list_socs()
        if name not in known:
            raise SocError(f"unknown SoC {name!r}; known SoCs: {', '.join(known)}")
        path = _data_dir() / f"{name}.json"
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise SocError(f"SoC spec {name}.json is not valid JSON: {e}") from None
        soc = parse_soc(raw, f"SoC spec {name}.json")
        if soc.name != name:
            raise SocError(f"SoC spec {name}.json names itself {soc.name!r}")
        _CACHE[name] = soc
    return _CACHE[name]


def all_socs() -> list[Soc]:
    """Every SoC that has a spec file, by name."""
    return [load_soc(n) for n in list_socs()]
