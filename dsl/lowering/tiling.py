"""Pass 1 — host tiling: the per-core split, tile sizes and tails, as plain C++.

The formulas are written once, below, in a tiny expression language that is valid C++
(with the helpers ``ceil_div``/``align_up``/... defined in the generated header) and is
also evaluated in Python by the checker, so the UB budget of an assignment is known before
anything is built. The generated C++ (``<op>_tiling.h``) is the source of truth at run
time: the CANN host ``TilingFunc`` and the emulator both call it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import ir

# Quantities derived from the shapes before the formulas run (computed by a fixed prologue).
SHAPE_VARS = {
    "tiles": ("n",),
    "rows": ("N", "W"),
    "slabs": ("A", "K", "B"),
}


def formulas(loop: ir.Loop, chunked: bool) -> list[tuple[str, str]]:
    """(field, expression) pairs, evaluated in order; every field lands in the tiling struct."""
    tile = str(loop.tile)
    cores = "coreNum" if loop.cores is None else f"min({loop.cores}, coreNum)"
    if loop.kind == "tiles":
        return [
            ("units", "ceil_div(n, U)"),
            ("blockDim", f"max(1, min({cores}, units))"),
            ("baseUnits", "floor_div(units, blockDim)"),
            ("bigCores", "units - baseUnits * blockDim"),
            ("tileLen", f"max(U, min(align_down({tile}, U), (baseUnits + sel(bigCores > 0, 1, 0)) * U))"),
            ("tileElems", "tileLen"),
            ("rowElems", "0"),
            ("colElems", "0"),
            ("workElems", "0"),
        ]
    if loop.kind == "rows":
        chunk = None
        for s in loop.body:
            if isinstance(s, ir.InnerLoop) and s.kind == "chunks":
                chunk = str(s.size)
        out = [
            ("blockDim", f"max(1, min({cores}, N))"),
            ("baseRows", "floor_div(N, blockDim)"),
            ("bigCores", "N - baseRows * blockDim"),
            ("tileRows", f"max(1, min({tile}, baseRows + sel(bigCores > 0, 1, 0)))"),
            ("widthPad", "align_up(W, U)"),
        ]
        if chunked:
            out.append(("chunk", f"max(U, min(align_down({chunk}, U), widthPad))"))
        else:
            out.append(("chunk", "W"))
        out += [
            ("chunkPad", "align_up(chunk, U)"),
            ("tileElems", "tileRows * chunkPad"),
            ("rowElems", "align_up(tileRows, 64)"),
            ("colElems", "chunkPad"),
            ("workElems", "align_up(ceil_div(chunkPad, 8), 64)"),
        ]
        return out
    return [
        ("tileLen", f"max(U, min(align_down({tile}, U), align_up(B, U)))"),
        ("blocksPerOuter", "ceil_div(B, tileLen)"),
        ("items", "A * blocksPerOuter"),
        ("blockDim", f"max(1, min({cores}, items))"),
        ("baseItems", "floor_div(items, blockDim)"),
        ("bigCores", "items - baseItems * blockDim"),
        ("tileElems", "tileLen"),
        ("rowElems", "0"),
        ("colElems", "0"),
        ("workElems", "0"),
    ]


_PY_HELPERS = {
    "ceil_div": lambda a, b: -(-a // b),
    "floor_div": lambda a, b: a // b,
    "align_up": lambda a, b: -(-a // b) * b,
    "align_down": lambda a, b: (a // b) * b,
    "min": min,
    "max": max,
    "sel": lambda c, a, b: a if c else b,
}
_SAFE_EXPR = re.compile(r"^[A-Za-z0-9_ ,()+\-*>]*$")


@dataclass(frozen=True)
class TilingSpec:
    """Everything needed to render the tiling header and to evaluate it in Python."""

    op: str
    kind: str
    ref_index: int  # which tensor defines the iteration space
    dim: int
    unit: int  # row/tile alignment in elements (32 B of the narrowest dtype)
    formulas: tuple[tuple[str, str], ...]
    buffers: tuple[tuple[str, int, str], ...]  # (bytes field, slots, bytes expression)
    tunables: tuple[str, ...]
    scalars: tuple[str, ...]

    @property
    def struct_name(self) -> str:
        return f"{camel(self.op)}TilingData"

    def fields(self) -> list[str]:
        return (list(SHAPE_VARS[self.kind]) + ["coreNum"] + [f for f, _ in self.all_formulas()]
                + ["ubBytes"])

    def all_formulas(self) -> tuple[tuple[str, str], ...]:
        """The split formulas followed by one byte size per UB buffer."""
        return self.formulas + tuple((f, e) for f, _, e in self.buffers)

    def ub_expr(self) -> str:
        terms = [f"{slots} * {f}" for f, slots, _ in self.buffers]
        return " + ".join(terms) if terms else "0"

    def evaluate(self, dims: list[list[int]], tunables: dict[str, int], core_num: int) -> dict[str, int]:
        """The Python evaluation of the same formulas the C++ header computes."""
        env: dict[str, int] = dict(_PY_HELPERS)
        env.update({"U": self.unit, "coreNum": core_num})
        env.update(tunables)
        env.update(shape_vars(self.kind, dims[self.ref_index], self.dim))
        out = {k: env[k] for k in SHAPE_VARS[self.kind]}
        out["coreNum"] = core_num
        for name, expr in self.all_formulas() + (("ubBytes", self.ub_expr()),):
            assert _SAFE_EXPR.match(expr), expr
            env[name] = int(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 - our own formulas
            out[name] = env[name]
        return out


def shape_vars(kind: str, dims: list[int], dim: int) -> dict[str, int]:
    """Python mirror of the header's prologue (kept trivially small on purpose)."""
    numel = 1
    for d in dims:
        numel *= d
    if kind == "tiles":
        if numel == 0:
            raise ValueError("empty tensor")
        return {"n": numel}
    if kind == "rows":
        if dim > len(dims):
            raise ValueError(f"rows(dims={dim}) needs a tensor of rank >= {dim}, got rank {len(dims)}")
        w = 1
        for d in dims[len(dims) - dim:]:
            w *= d
        if w == 0 or numel == 0:
            raise ValueError("empty tensor")
        return {"W": w, "N": numel // w}
    if dim >= len(dims):
        raise ValueError(f"slabs(dim={dim}) needs a tensor of rank > {dim}, got rank {len(dims)}")
    a = 1
    for d in dims[:dim]:
        a *= d
    b = 1
    for d in dims[dim + 1:]:
        b *= d
    if numel == 0:
        raise ValueError("empty tensor")
    return {"A": a, "K": dims[dim], "B": b}


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def render_header(spec: TilingSpec) -> str:
    """The plain C++ tiling header shared by the CANN host code and the emulator."""
    s = spec.struct_name
    fn = f"{camel(spec.op)}ComputeTiling"
    lines = [
        f"// Tiling for '{spec.op}' — generated by ascendcraft (pass 1: host tiling). Plain C++,",
        "// shared by the CANN host TilingFunc and the emulator: the one source of the split.",
        "#pragma once",
        "#include <cstdint>",
        "",
        "namespace acx_tiling_util {",
        "inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }",
        "inline int64_t floor_div(int64_t a, int64_t b) { return a / b; }",
        "inline int64_t align_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }",
        "inline int64_t align_down(int64_t a, int64_t b) { return (a / b) * b; }",
        "inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }",
        "inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }",
        "inline int64_t sel(bool c, int64_t a, int64_t b) { return c ? a : b; }",
        "}  // namespace acx_tiling_util",
        "",
        f"struct {s} {{",
    ]
    for f in spec.fields():
        lines.append(f"    int64_t {f};")
    for sc in spec.scalars:
        lines.append(f"    float {sc};")
    lines.append("};")
    lines.append("")
    tun_params = "".join(f", int64_t {t}" for t in spec.tunables)
    sc_params = "".join(f", float {x}" for x in spec.scalars)
    lines += [
        "// dims/ranks: the shapes of the kernel's tensors (inputs then outputs); returns 0 or an",
        "// error message (static string) for shapes the kernel cannot handle.",
        f"inline const char* {fn}(const int64_t* dims, const int32_t* ranks, int32_t nTensors,",
        f"                        int64_t coreNum{tun_params}{sc_params}, {s}* t) {{",
        "    using namespace acx_tiling_util;",
        f"    const int64_t U = {spec.unit};",
        f"    if (nTensors <= {spec.ref_index}) return \"missing tensor shapes\";",
        "    int64_t off = 0;",
        f"    for (int32_t i = 0; i < {spec.ref_index}; ++i) off += ranks[i];",
        "    const int64_t* d = dims + off;",
        f"    const int32_t rank = ranks[{spec.ref_index}];",
        "    int64_t numel = 1;",
        "    for (int32_t i = 0; i < rank; ++i) numel *= d[i];",
        "    if (numel <= 0) return \"empty tensor\";",
    ]
    if spec.kind == "tiles":
        lines.append("    const int64_t n = numel;")
    elif spec.kind == "rows":
        lines += [
            f"    if (rank < {spec.dim}) return \"rows(): tensor rank is smaller than dims\";",
            "    int64_t W = 1;",
            f"    for (int32_t i = rank - {spec.dim}; i < rank; ++i) W *= d[i];",
            "    const int64_t N = numel / W;",
        ]
    else:
        lines += [
            f"    if (rank <= {spec.dim}) return \"slabs(): tensor rank is not above dim\";",
            "    int64_t A = 1, B = 1;",
            f"    for (int32_t i = 0; i < {spec.dim}; ++i) A *= d[i];",
            f"    for (int32_t i = {spec.dim} + 1; i < rank; ++i) B *= d[i];",
            f"    const int64_t K = d[{spec.dim}];",
        ]
    for v in SHAPE_VARS[spec.kind]:
        lines.append(f"    t->{v} = {v};")
    lines.append("    t->coreNum = coreNum;")
    for name, expr in spec.all_formulas():
        lines.append(f"    const int64_t {name} = {expr};")
        lines.append(f"    t->{name} = {name};")
    lines.append(f"    t->ubBytes = {spec.ub_expr()};")
    for sc in spec.scalars:
        lines.append(f"    t->{sc} = {sc};")
    lines += ["    return nullptr;", "}", ""]
    return "\n".join(lines)
