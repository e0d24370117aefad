"""Lowering of ``@cube_kernel`` programs to AscendC: host tiling, the cube (AIC) kernel and the
vector (AIV) kernel, for the emulator and for CANN.

Passes, in the order a person writes them by hand:

1. **host tiling** — one TilingData struct and one ``<Op>ComputeTiling`` function in plain
   C++ (``<op>_tiling.h``) shared by the CANN host code and the emulator; the same formulas
   are evaluated in Python by :func:`check_cube_budget` so that L1 / L0A / L0B / L0C / UB
   capacity and fractal alignment are checked, with numbers, before anything is built;
2. **cube kernel** (AIC): output blocks over the cube cores in the chosen order (row-major,
   column-major, swizzled groups), optional split-K; per block K is staged GM → L1 with the
   ND → Nz ``DataCopy`` (ping-pong ``STAGES``), L1 → L0A/L0B with ``LoadData`` (ping-pong),
   ``Mmad`` accumulating in L0C, ``Fixpipe`` to GM (Nz → ND, optional ReLU and fp32 → fp16/bf16);
3. **vector kernel** (AIV): the rows stage — tiles of rows and column chunks through UB
   queues (``DataCopy``/``DataCopyPad``), the epilogue math, per-row value groups
   (``Gather`` transposes between [rows, G] in GM and [G, rows] in UB), Sinkhorn-Knopp.

On the split 910B the two kernels are two launches sharing GM: the cube kernel writes the
workspace (or the output), the vector kernel reads it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .. import ir
from ..checker import TypedProgram, check_program
from ..ir import DTYPE_BYTES
from ..names import mangle, op_name, size_expr, tunable
from ..parser import DslError, parse
from .compute import ERF_A, ERF_P, REDUCE, VEC1, VEC2
from .support import check_cube_supported
from .tiling import camel

CTYPE = {"f32": "float", "f16": "half", "bf16": "bfloat16_t"}
QUANT = {"f32": "QuantMode_t::NoQuant", "f16": "QuantMode_t::F322F16", "bf16": "QuantMode_t::F322BF16"}
U = 16  # column alignment of vector-stage chunks (elements): 32 B of a 16-bit type

_PY = {
    "ceil_div": lambda a, b: -(-a // b),
    "floor_div": lambda a, b: a // b,
    "align_up": lambda a, b: -(-a // b) * b,
    "align_down": lambda a, b: (a // b) * b,
    "min": min,
    "max": max,
    "sel": lambda c, a, b: a if c else b,
}
_SAFE = re.compile(r"^[A-Za-z0-9_ ,()+\-*>=<]*$")


def _terms(expr: str) -> list[str]:
    """The arguments of a nest of max(...) (or the expression itself)."""
    if expr.startswith("max(") and expr.endswith(")"):
        depth, start, out = 0, 4, []
        for i, ch in enumerate(expr[4:-1], start=4):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 0:
                out += _terms(expr[start:i].strip())
                start = i + 1
        return out + _terms(expr[start:-1].strip())
    return [expr]


def _eval(expr: str, env: dict) -> int:
    assert _SAFE.match(expr), expr
    return int(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 - our own formulas


# ============================================================================ tiling


@dataclass(frozen=True)
class Buf:
    """One on-chip allocation: a queue (``depth`` slots) or a TBuf (one slot)."""

    name: str
    pos: str  # A1 B1 A2 B2 CO1 VECIN VECOUT VECCALC
    bytes_expr: str
    depth: str = "1"  # compile-time depth symbol or literal
    dtype: str = "f32"

    @property
    def mem(self) -> str:
        return {"A1": "L1", "B1": "L1", "A2": "L0A", "B2": "L0B", "CO1": "L0C"}.get(self.pos, "UB")


@dataclass
class CubeTiling:
    """The host tiling: shape prologue, formulas (C++ == Python), on-chip buffers."""

    op: str
    program: ir.Program
    formulas: list[tuple[str, str]] = field(default_factory=list)
    buffers: list[Buf] = field(default_factory=list)
    chunk_loops: list[ir.InnerLoop] = field(default_factory=list)
    vec_tensors: dict[str, bool] = field(default_factory=dict)  # vector-stage tensors -> needs a row width

    @property
    def struct_name(self) -> str:
        return f"{camel(self.op)}TilingData"

    def shape_fields(self) -> list[str]:
        out = []
        if self.program.cube is not None:
            out += ["Bt", "M", "N", "K"]
        if self.program.vector is not None:
            out += ["vN", "vW"] + [mangle("numel", t) for t in self.vec_tensors]
            out += [mangle("width", t) for t, w in self.vec_tensors.items() if w]
        return out

    def fields(self) -> list[str]:
        names = self.shape_fields() + ["coreNumCube", "coreNumVec"]
        names += [f for f, _ in self.all_formulas()]
        for mem in ("L1", "L0A", "L0B", "L0C", "UB"):
            names.append(f"bytes{mem}")
        return names

    def all_formulas(self) -> list[tuple[str, str]]:
        """The split formulas, then one byte size per on-chip buffer (``b_<name>``)."""
        return self.formulas + [(f"b_{b.name}", b.bytes_expr) for b in self.buffers]

    def mem_expr(self, mem: str) -> str:
        terms = [f"{b.depth} * b_{b.name}" for b in self.buffers if b.mem == mem]
        return " + ".join(terms) if terms else "0"

    # ---- Python mirror of the C++ prologue + formulas
    def evaluate(self, dims: list[list[int]], tunables: dict[str, int], core_cube: int,
                 core_vec: int) -> dict[str, int]:
        env: dict = dict(_PY)
        env.update({tunable(k): v for k, v in tunables.items()})
        env.update(shape_vars(self.program, dims, self.vec_tensors))
        env["coreNumCube"], env["coreNumVec"] = core_cube, core_vec
        out = {k: env[k] for k in self.shape_fields()}
        out["coreNumCube"], out["coreNumVec"] = core_cube, core_vec
        for name, expr in self.all_formulas():
            env[name] = _eval(expr, env)
            out[name] = env[name]
        for b in self.buffers:
            out[f"buf_{b.name}"] = env[f"b_{b.name}"] * _eval(str(b.depth), env)
        for mem in ("L1", "L0A", "L0B", "L0C", "UB"):
            out[f"bytes{mem}"] = _eval(self.mem_expr(mem), env)
        return out


def _numel(d: list[int]) -> int:
    return math.prod(d) if d else 1


def operand_view(op: ir.Operand, d: list[int], batched: bool, role: str) -> tuple[int, int, int, int]:
    """(batch, rows, cols, rank) of an operand as stored, following the view rules."""
    if batched:
        if len(d) != 3:
            raise ValueError(f"batched=True needs 3-D operands; {role} '{op.tensor}' has shape {d}")
        return d[0], d[1], d[2], 3
    if len(d) < 2:
        raise ValueError(f"{role} '{op.tensor}' must have rank >= 2, has shape {d}")
    s = op.split if op.split is not None else len(d) - 1
    if s >= len(d):
        raise ValueError(f"matrix({op.tensor}, {s}) needs rank > {s}, shape is {d}")
    return 1, _numel(d[:s]), _numel(d[s:]), len(d)


def shape_vars(p: ir.Program, dims: list[list[int]], vec_tensors: dict[str, bool]) -> dict[str, int]:
    """Python mirror of the tiling header's shape prologue; ValueError names the problem."""
    names = [t.name for t in p.tensors]
    by = dict(zip(names, dims, strict=False))
    out: dict[str, int] = {}
    c = p.cube
    if c is not None:
        ba, ra, ca, _ = operand_view(c.a, by[c.a.tensor], c.batched, "A")
        bb, rb, cb, _ = operand_view(c.b, by[c.b.tensor], c.batched, "B")
        m, ka = (ca, ra) if c.a.transpose else (ra, ca)
        kb, n = (cb, rb) if c.b.transpose else (rb, cb)
        if ka != kb:
            raise ValueError(f"inner dimensions differ: A '{c.a.tensor}' {by[c.a.tensor]} gives K={ka}, "
                             f"B '{c.b.tensor}' {by[c.b.tensor]} gives K={kb}")
        if ba != bb:
            raise ValueError(f"batch sizes differ: {ba} and {bb}")
        if m <= 0 or n <= 0 or ka <= 0:
            raise ValueError("empty matmul")
        out.update(Bt=ba, M=m, N=n, K=ka)
        if not p.is_workspace(c.target) and _numel(by[c.target]) != ba * m * n:
            raise ValueError(f"output '{c.target}' has shape {by[c.target]} but the matmul gives "
                             f"{f'{ba} x ' if c.batched else ''}{m} x {n}")
    v = p.vector
    if v is not None:
        def dims_of(t: str) -> list[int]:
            if p.is_workspace(t):
                return [out["Bt"], out["M"], out["N"]]
            return by[t]

        ld = dims_of(v.tensor)
        if len(ld) < v.dim:
            raise ValueError(f"rows({v.tensor}, dims={v.dim}) needs rank >= {v.dim}, shape is {ld}")
        w = _numel(ld[len(ld) - v.dim:])
        n_rows = _numel(ld) // w if w else 0
        if w <= 0 or n_rows <= 0:
            raise ValueError("empty rows loop")
        out.update(vN=n_rows, vW=w)
        for t, needs_w in vec_tensors.items():
            n_t = _numel(dims_of(t))
            out[mangle("numel", t)] = n_t
            if needs_w:
                if n_t % n_rows:
                    raise ValueError(f"'{t}' has {n_t} elements, not a whole number per row of the {n_rows} "
                                     f"rows of '{v.tensor}'")
                out[mangle("width", t)] = n_t // n_rows
    return out


def _cube_formulas(p: ir.Program) -> list[tuple[str, str]]:
    c = p.cube
    assert c is not None
    eb = DTYPE_BYTES[p.dtype_of(c.a.tensor)]
    cores = "coreNumCube" if c.cores is None else f"min({size_expr(c.cores)}, coreNumCube)"
    return [
        ("bm", f"max(16, min({size_expr(c.m)}, align_up(M, 16)))"),
        ("bn", f"max(16, min({size_expr(c.n)}, align_up(N, 16)))"),
        ("bk", f"max(16, {size_expr(c.k_l0)})"),
        ("spl0", f"max(1, min({size_expr(c.split_k)}, ceil_div(K, bk)))"),
        ("kPerSplit", "align_up(ceil_div(K, spl0), bk)"),
        ("splits", "ceil_div(K, kPerSplit)"),
        ("kl1", f"min(max(bk, align_down({size_expr(c.k_l1)}, bk)), kPerSplit)"),
        ("nM", "ceil_div(M, bm)"),
        ("nN", "ceil_div(N, bn)"),
        ("blocks", "Bt * nM * nN * splits"),
        ("cubeDim", f"max(1, min({cores}, blocks))"),
        ("order", size_expr(c.order)),
        ("group", f"max(1, {size_expr(c.group)})"),
        ("eb", f"{eb}"),
    ]


def _vec_formulas(p: ir.Program, chunks: list[ir.InnerLoop]) -> list[tuple[str, str]]:
    v = p.vector
    assert v is not None
    cores = "coreNumVec" if v.cores is None else f"min({size_expr(v.cores)}, coreNumVec)"
    out = [
        ("vDim", f"max(1, min({cores}, vN))"),
        ("baseRows", "floor_div(vN, vDim)"),
        ("bigRows", "vN - baseRows * vDim"),
        ("tileRows", f"max(1, min({size_expr(v.tile)}, baseRows + sel(bigRows > 0, 1, 0)))"),
        ("rpad", "align_up(tileRows, 64)"),
    ]
    if p.cube is None:
        out.append(("splits", "1"))
    for i, ch in enumerate(chunks):
        out += [
            (f"pw{i}", f"floor_div(vW, {ch.parts})"),
            (f"ch{i}", f"max({U}, min(align_down({size_expr(ch.size)}, {U}), align_up(pw{i}, {U})))"),
        ]
    chmax = str(U)
    for i in range(len(chunks)):
        chmax = f"max({chmax}, ch{i})"
    out += [("chmax", chmax), ("wkmax", "align_up(ceil_div(chmax, 64), 8) * 4")]
    return out


def render_header(t: CubeTiling) -> str:
    """The plain C++ tiling header shared by the CANN host code and both kernels."""
    p = t.program
    fn = f"{camel(t.op)}ComputeTiling"
    s = t.struct_name
    names = [x.name for x in p.tensors]
    L = [
        f"// Tiling for cube kernel '{t.op}' — generated by ascendcraft (pass 1: host tiling). Plain C++,",
        "// shared by the CANN host TilingFunc and the emulator: the one source of the split.",
        "#pragma once",
        "#include <cstdint>",
        "",
        "namespace acx_cube_tiling {",
        "inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }",
        "inline int64_t floor_div(int64_t a, int64_t b) { return a / b; }",
        "inline int64_t align_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }",
        "inline int64_t align_down(int64_t a, int64_t b) { return (a / b) * b; }",
        "inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }",
        "inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }",
        "inline int64_t sel(bool c, int64_t a, int64_t b) { return c ? a : b; }",
        "}  // namespace acx_cube_tiling",
        "",
        f"struct {s} {{",
    ]
    for f in t.fields():
        L.append(f"    int64_t {f};")
    for sc in p.scalars:
        L.append(f"    float {mangle('sc', sc.name)};")
    L += ["};", ""]
    tun = "".join(f", int64_t {tunable(x.name)}" for x in p.tunables)
    scs = "".join(f", float {mangle('sc', x.name)}" for x in p.scalars)
    L += [
        "// dims/ranks: shapes of the kernel's tensors (inputs then outputs, workspaces excluded).",
        "// Returns nullptr or an error message (static string).",
        f"inline const char* {fn}(const int64_t* dims, const int32_t* ranks, int32_t nTensors,",
        f"                        int64_t coreNumCube, int64_t coreNumVec{tun}{scs}, {s}* t) {{",
        "    using namespace acx_cube_tiling;",
        f"    if (nTensors != {len(names)}) return \"expected {len(names)} tensor shapes\";",
        f"    const int64_t* d[{len(names)}];",
        f"    int64_t numel[{len(names)}];",
        "    { int64_t off = 0;",
        f"      for (int32_t i = 0; i < {len(names)}; ++i) {{ d[i] = dims + off; numel[i] = 1;",
        "        for (int32_t j = 0; j < ranks[i]; ++j) numel[i] *= d[i][j]; off += ranks[i]; } }",
    ]
    c = p.cube
    if c is not None:
        def view(op: ir.Operand, var: str) -> list[str]:
            i = names.index(op.tensor)
            if c.batched:
                return [f"    if (ranks[{i}] != 3) return \"batched=True needs 3-D operands\";",
                        f"    const int64_t {var}b = d[{i}][0], {var}r = d[{i}][1], {var}c = d[{i}][2];"]
            s_ = f"{op.split}" if op.split is not None else f"(ranks[{i}] - 1)"
            return [f"    if (ranks[{i}] < 2 || ranks[{i}] <= {s_}) return \"matmul operand rank too small\";",
                    f"    int64_t {var}r = 1, {var}c = 1; const int64_t {var}b = 1;",
                    f"    for (int32_t j = 0; j < ranks[{i}]; ++j) {{ if (j < {s_}) {var}r *= d[{i}][j]; "
                    f"else {var}c *= d[{i}][j]; }}"]
        L += view(c.a, "a") + view(c.b, "b")
        L.append(f"    const int64_t M = {'ac' if c.a.transpose else 'ar'}, Ka = {'ar' if c.a.transpose else 'ac'};")
        L.append(f"    const int64_t Kb = {'bc' if c.b.transpose else 'br'}, N = {'br' if c.b.transpose else 'bc'};")
        L += ["    if (Ka != Kb) return \"matmul inner dimensions differ\";",
              "    if (ab != bb) return \"matmul batch sizes differ\";",
              "    const int64_t Bt = ab, K = Ka;",
              "    if (M <= 0 || N <= 0 || K <= 0) return \"empty matmul\";"]
        if not p.is_workspace(c.target):
            L.append(f"    if (numel[{names.index(c.target)}] != Bt * M * N) return \"output shape does not match the matmul\";")
        L += ["    t->Bt = Bt; t->M = M; t->N = N; t->K = K;"]
    v = p.vector
    if v is not None:
        if p.is_workspace(v.tensor):
            L.append("    const int64_t ldims[3] = {Bt, M, N}; const int32_t lrank = 3; const int64_t lnum = Bt * M * N;")
        else:
            i = names.index(v.tensor)
            L.append(f"    const int64_t* ldims = d[{i}]; const int32_t lrank = ranks[{i}]; const int64_t lnum = numel[{i}];")
        L += [f"    if (lrank < {v.dim}) return \"rows(): tensor rank is smaller than dims\";",
              "    int64_t vW = 1;",
              f"    for (int32_t j = lrank - {v.dim}; j < lrank; ++j) vW *= ldims[j];",
              "    if (vW <= 0 || lnum <= 0) return \"empty rows loop\";",
              "    const int64_t vN = lnum / vW;",
              "    t->vN = vN; t->vW = vW;"]
        for tn, needs_w in t.vec_tensors.items():
            n_expr = "Bt * M * N" if p.is_workspace(tn) else f"numel[{names.index(tn)}]"
            L.append(f"    t->{mangle('numel', tn)} = {n_expr};")
            if needs_w:
                L.append(f"    if (({n_expr}) % vN != 0) return \"a tensor of the rows stage is not a whole number "
                         "of values per row\";")
                L.append(f"    t->{mangle('width', tn)} = ({n_expr}) / vN;")
    L.append("    t->coreNumCube = coreNumCube; t->coreNumVec = coreNumVec;")
    for name, expr in t.all_formulas():
        L.append(f"    const int64_t {name} = {expr};")
        L.append(f"    t->{name} = {name};")
    for mem in ("L1", "L0A", "L0B", "L0C", "UB"):
        L.append(f"    t->bytes{mem} = {t.mem_expr(mem)};")
    for sc in p.scalars:
        L.append(f"    t->{mangle('sc', sc.name)} = {mangle('sc', sc.name)};")
    L += ["    return nullptr;", "}", ""]
    return "\n".join(L)


# ============================================================================ cube kernel (AIC)


def _cube_buffers(p: ir.Program) -> list[Buf]:
    c = p.cube
    assert c is not None
    dt = p.dtype_of(c.a.tensor)
    return [
        Buf("qA1", "A1", "bm * kl1 * eb", size_expr(c.stages), dt),
        Buf("qB1", "B1", "kl1 * bn * eb", size_expr(c.stages), dt),
        Buf("qA2", "A2", "bm * bk * eb", size_expr(c.l0_depth), dt),
        Buf("qB2", "B2", "bk * bn * eb", size_expr(c.l0_depth), dt),
        Buf("qC1", "CO1", "bm * bn * 4", size_expr(c.acc_depth), "f32"),
    ]


CUBE_PRELUDE = r"""
__aicore__ inline int64_t acx_min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_align16(int64_t a) { return (a + 15) / 16 * 16; }

// GM -> L1, ND -> Nz: `rows` x `cols` elements of a row-major matrix with row stride `ld`,
// written as Nz with C0-wide column blocks and `rowsPad` rows per block. Row strides
// above the Nd2Nz limit (65535) fall back to one row per call.
template <typename T>
__aicore__ inline void CopyNd2Nz(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows,
                                 int64_t cols, int64_t ld, int64_t rowsPad) {
    constexpr int64_t C0 = 32 / sizeof(T);
    if (ld <= 65535) {
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = static_cast<uint16_t>(rows);
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = 0;
        p.srcDValue = static_cast<uint16_t>(ld);
        p.dstNzC0Stride = static_cast<uint16_t>(rowsPad);
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = 0;
        DataCopy(dst, src, p);
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = 1;
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = 0;
        p.srcDValue = static_cast<uint16_t>(cols);
        p.dstNzC0Stride = static_cast<uint16_t>(rowsPad);
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = 0;
        DataCopy(dst[r * C0], src[r * ld], p);
    }
}

// GM -> L1 for fp32 B stored K x N: `rows` x `cols` (row stride `ld`) as 16-row strips, each strip
// Nz with 16-row column blocks (its 16 x 8 fractals consecutive, so two of them form the 16 x 16
// square LoadDataWithTranspose takes); strips are 16 * colsPad elements apart.
template <typename T>
__aicore__ inline void CopyNd2Strips(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows,
                                     int64_t cols, int64_t ld, int64_t colsPad) {
    int64_t s = 0;
    if (ld <= 4095 && colsPad <= 1024 && rows >= 16) {  // full strips in one call (one ND matrix each)
        Nd2NzParams p;
        p.ndNum = static_cast<uint16_t>(rows / 16);
        p.nValue = 16;
        p.dValue = static_cast<uint16_t>(cols);
        p.srcNdMatrixStride = static_cast<uint16_t>(16 * ld);
        p.srcDValue = static_cast<uint16_t>(ld);
        p.dstNzC0Stride = 16;
        p.dstNzNStride = 1;
        p.dstNzMatrixStride = static_cast<uint16_t>(16 * colsPad);
        DataCopy(dst, src, p);
        s = rows / 16;
    }
    for (; s * 16 < rows; ++s)
        CopyNd2Nz(dst[s * 16 * colsPad], src[s * 16 * ld], acx_min(16, rows - s * 16), cols, ld, 16);
}

__aicore__ inline void Load2DTrans32(const LocalTensor<CUBE_T>& dst, const LocalTensor<CUBE_T>& src,
                                     int64_t squares) {
    LoadData2dTransposeParams p;
    p.startIndex = 0;
    p.repeatTimes = static_cast<uint8_t>(squares);
    p.srcStride = 1;
    p.dstGap = 0;
    p.dstFracGap = static_cast<uint16_t>(squares - 1);
    p.addrMode = 0;
    LoadDataWithTranspose(dst, src, p);
}

__aicore__ inline void Load2D(const LocalTensor<CUBE_T>& dst, const LocalTensor<CUBE_T>& src, int64_t repeat,
                              int64_t srcStride, bool transpose) {
    LoadData2DParams p;
    p.startIndex = 0;
    p.repeatTimes = static_cast<uint8_t>(repeat);
    p.srcStride = static_cast<uint16_t>(srcStride);
    p.sid = 0;
    p.dstGap = 0;
    p.ifTranspose = transpose;
    p.addrMode = 0;
    LoadData(dst, src, p);
}
""".strip("\n")


def _cube_kernel_class(p: ir.Program, t: CubeTiling) -> str:
    c = p.cube
    assert c is not None
    dt = p.dtype_of(c.a.tensor)
    T = CTYPE[dt]
    out_t = CTYPE[c.out_dtype]
    c0 = 32 // DTYPE_BYTES[dt]
    fr = 512 // DTYPE_BYTES[dt]  # elements per 512 B fractal
    cls = f"CubeKernel{camel(p.name)}"
    names = [x.name for x in p.tensors]
    gm_args = names[:len(p.inputs)] + [w.name for w in p.workspaces] + names[len(p.inputs):]
    ta, tb = c.a.transpose, c.b.transpose
    L = [CUBE_PRELUDE.replace("CUBE_T", T), ""]
    L += ["template <typename TilingT>", f"class {cls} {{", "public:", f"    __aicore__ inline {cls}() {{}}"]
    L.append(f"    __aicore__ inline void Init({', '.join('GM_ADDR ' + mangle('arg', n) for n in gm_args)}, "
             "const TilingT& td) {")
    L.append("        td_ = td;")
    L.append(f"        aGm.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', c.a.tensor)}), "
             "static_cast<uint64_t>(td.Bt * td.M * td.K));")
    L.append(f"        bGm.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', c.b.tensor)}), "
             "static_cast<uint64_t>(td.Bt * td.K * td.N));")
    slices = "td.splits * " if p.is_workspace(c.target) else ""
    L.append(f"        cGm.SetGlobalBuffer(reinterpret_cast<__gm__ {out_t}*>({mangle('arg', c.target)}), "
             f"static_cast<uint64_t>({slices}td.Bt * td.M * td.N));")
    for b in t.buffers:
        if b.mem != "UB":
            L.append(f"        pipe.InitBuffer({b.name}, {_DEPTH_CONST[b.pos]}, static_cast<uint32_t>(td.b_{b.name}));")
    L.append("    }")
    a_off = "bt * td_.M * td_.K + " + ("k1 * td_.M + row0" if ta else "row0 * td_.K + k1")
    b_off = "bt * td_.K * td_.N + " + ("col0 * td_.K + k1" if tb else "k1 * td_.N + col0")
    L += [
        "",
        "    __aicore__ inline void Process() {",
        "        const int64_t core = GetBlockIdx();",
        "        const int64_t perBatch = td_.nM * td_.nN;",
        "        for (int64_t blk = core; blk < td_.blocks; blk += td_.cubeDim) {",
        "            const int64_t split = blk % td_.splits;",
        "            const int64_t tile = blk / td_.splits;",
        "            const int64_t bt = tile / perBatch;",
        "            const int64_t rest = tile % perBatch;",
        "            int64_t mi, ni;  // output block order over the cube cores",
        "            if (td_.order == 1) {  // column-major",
        "                ni = rest / td_.nM; mi = rest % td_.nM;",
        "            } else if (td_.order == 2) {  // swizzled: groups of `group` block rows, column-first inside",
        "                const int64_t g = rest / (td_.group * td_.nN);",
        "                const int64_t rowsIn = acx_min(td_.group, td_.nM - g * td_.group);",
        "                const int64_t idx = rest % (td_.group * td_.nN);",
        "                mi = g * td_.group + idx % rowsIn; ni = idx / rowsIn;",
        "            } else {  // row-major",
        "                mi = rest / td_.nN; ni = rest % td_.nN;",
        "            }",
        "            const int64_t row0 = mi * td_.bm, col0 = ni * td_.bn;",
        "            const int64_t mB = acx_min(td_.bm, td_.M - row0), nB = acx_min(td_.bn, td_.N - col0);",
        "            const int64_t m16 = acx_align16(mB), n16 = acx_align16(nB);",
        "            const int64_t kBeg = split * td_.kPerSplit, kEnd = acx_min(td_.K, kBeg + td_.kPerSplit);",
        "            LocalTensor<float> c1 = qC1.AllocTensor<float>();",
        "            bool first = true;",
        "            for (int64_t k1 = kBeg; k1 < kEnd; k1 += td_.kl1) {",
        "                const int64_t kB = acx_min(td_.kl1, kEnd - k1);",
        "                const int64_t k16 = acx_align16(kB);",
        f"                // GM -> L1 (ND -> Nz), DSL line {c.loc.line}",
        f"                LocalTensor<{T}> a1 = qA1.AllocTensor<{T}>();",
    ]
    if ta:
        L.append(f"                CopyNd2Nz(a1, aGm[{a_off}], kB, mB, td_.M, k16);  // A stored K x M")
    else:
        L.append(f"                CopyNd2Nz(a1, aGm[{a_off}], mB, kB, td_.K, m16);")
    L += ["                qA1.EnQue(a1);", f"                LocalTensor<{T}> b1 = qB1.AllocTensor<{T}>();"]
    b32_kn = not tb and DTYPE_BYTES[dt] == 4
    if tb:
        L.append(f"                CopyNd2Nz(b1, bGm[{b_off}], nB, kB, td_.K, n16);  // B stored N x K")
    elif b32_kn:
        L.append(f"                CopyNd2Strips(b1, bGm[{b_off}], kB, nB, td_.N, n16);  // fp32 B stored K x N")
    else:
        L.append(f"                CopyNd2Nz(b1, bGm[{b_off}], kB, nB, td_.N, k16);")
    L += [
        "                qB1.EnQue(b1);",
        f"                a1 = qA1.DeQue<{T}>();",
        f"                b1 = qB1.DeQue<{T}>();",
        "                for (int64_t k0 = 0; k0 < kB; k0 += td_.bk) {",
        "                    const int64_t kb0 = acx_min(td_.bk, kB - k0);",
        f"                    const int64_t kf0 = k0 / {c0}, k1f = (kb0 + {c0 - 1}) / {c0};  // K fractals (C0 = {c0})",
        "                    const int64_t n1 = n16 / 16;",
        "                    // L1 -> L0A (Zz) and L1 -> L0B (Zn)",
        f"                    LocalTensor<{T}> a2 = qA2.AllocTensor<{T}>();",
    ]
    if ta:
        L += ["                    for (int64_t mb = 0; mb < m16 / 16; ++mb)",
              f"                        Load2D(a2[mb * k1f * {fr}], a1[(mb * (k16 / 16) + kf0) * {fr}], k1f, 1, true);"]
    else:
        L += ["                    for (int64_t mb = 0; mb < m16 / 16; ++mb)",
              f"                        Load2D(a2[mb * k1f * {fr}], a1[(kf0 * (m16 / 16) + mb) * {fr}], k1f, m16 / 16, false);"]
    L += ["                    qA2.EnQue(a2);", f"                    LocalTensor<{T}> b2 = qB2.AllocTensor<{T}>();"]
    if tb:
        L += ["                    for (int64_t kf = 0; kf < k1f; ++kf)",
              f"                        Load2D(b2[kf * n1 * {fr}], b1[(kf0 + kf) * n1 * {fr}], n1, 1, false);"]
    elif b32_kn:  # each 16-row strip: n1 squares -> Zn fractals (k rows 0-7, then 8-15, n1 apart)
        L += ["                    for (int64_t ks = 0; ks < (kb0 + 15) / 16; ++ks)",
              f"                        Load2DTrans32(b2[ks * 2 * n1 * {fr}], b1[(k0 / 16 + ks) * n16 * 16], n1);"]
    else:
        L += ["                    for (int64_t kf = 0; kf < k1f; ++kf)",
              f"                        Load2D(b2[kf * n1 * {fr}], b1[(kf0 + kf) * {fr}], n1, k16 / 16, true);"]
    L += [
        "                    qB2.EnQue(b2);",
        f"                    a2 = qA2.DeQue<{T}>();",
        f"                    b2 = qB2.DeQue<{T}>();",
        f"                    MmadParams mp;  // DSL line {c.loc.line}: acc += A0 * B0",
        "                    mp.m = static_cast<uint16_t>(mB == 1 ? 2 : mB);  // m == 1 would switch Mmad to GEMV",
        "                    mp.n = static_cast<uint16_t>(nB);",
        "                    mp.k = static_cast<uint16_t>(kb0);",
        "                    mp.cmatrixInitVal = first;",
        "                    Mmad(c1, a2, b2, mp);",
        "                    first = false;",
        "                    qA2.FreeTensor(a2);",
        "                    qB2.FreeTensor(b2);",
        "                }",
        "                qA1.FreeTensor(a1);",
        "                qB1.FreeTensor(b1);",
        "            }",
        "            qC1.EnQue(c1);",
        "            c1 = qC1.DeQue<float>();",
        f"            FixpipeParamsV220 fp;  // DSL line {c.store_loc.line}: L0C -> GM (Nz -> ND)",
        "            fp.nSize = static_cast<uint16_t>(nB);",
        "            fp.mSize = static_cast<uint16_t>(mB);",
        "            fp.srcStride = static_cast<uint16_t>(m16);",
        "            fp.dstStride = static_cast<uint32_t>(td_.N);",
        f"            fp.quantPre = {QUANT[c.out_dtype]};",
        f"            fp.reluEn = {'true' if c.relu else 'false'};",
        "            fp.ndNum = 1;",
    ]
    slice_off = "split * td_.Bt * td_.M * td_.N + " if p.is_workspace(c.target) else ""
    L += [
        f"            Fixpipe<{out_t}, float, CFG_ROW_MAJOR>(cGm[{slice_off}bt * td_.M * td_.N + row0 * td_.N + col0], c1, fp);",
        "            qC1.FreeTensor(c1);",
        "        }",
        "    }",
        "",
        "private:",
        "    TPipe pipe;",
        "    TQue<TPosition::A1, STAGES> qA1;",
        "    TQue<TPosition::B1, STAGES> qB1;",
        "    TQue<TPosition::A2, L0DEPTH> qA2;",
        "    TQue<TPosition::B2, L0DEPTH> qB2;",
        "    TQue<TPosition::CO1, ACCDEPTH> qC1;",
        f"    GlobalTensor<{T}> aGm;",
        f"    GlobalTensor<{T}> bGm;",
        f"    GlobalTensor<{out_t}> cGm;",
        "    TilingT td_;",
        "};",
    ]
    return "\n".join(L)


_DEPTH_CONST = {"A1": "STAGES", "B1": "STAGES", "A2": "L0DEPTH", "B2": "L0DEPTH", "CO1": "ACCDEPTH"}


# ============================================================================ vector kernel (AIV)

VEC_PRELUDE = r"""
__aicore__ inline int64_t acx_vmin(int64_t a, int64_t b) { return a < b ? a : b; }

// Scalar reads of UB wait for the vector pipe.
__aicore__ inline void SyncVS() { SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0); }

// GM -> UB: `rows` rows of `len` elements, `gmStride` apart in GM and `ubStride` apart in UB.
// Whole 32 B blocks in one contiguous run: DataCopy; anything else: DataCopyPad (GM gaps in
// bytes, UB gaps in 32 B blocks, each row padded up to 32 B in UB).
template <typename T>
__aicore__ inline void RowsIn(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows, int64_t len,
                              int64_t gmStride, int64_t ubStride) {
    const int64_t eb = static_cast<int64_t>(sizeof(T));
    if ((len * eb) % 32 == 0 && (rows == 1 || (gmStride == len && ubStride == len))) {
        DataCopy(dst, src, static_cast<uint32_t>(rows * len));
        return;
    }
    const int64_t padded = (len * eb + 31) / 32 * 32;
    for (int64_t r0 = 0; r0 < rows; r0 += 4095) {
        const int64_t n = acx_vmin(4095, rows - r0);
        DataCopyExtParams p{static_cast<uint16_t>(n), static_cast<uint32_t>(len * eb),
                            static_cast<uint32_t>((gmStride - len) * eb),
                            static_cast<uint32_t>((ubStride * eb - padded) / 32), 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(dst[r0 * ubStride], src[r0 * gmStride], p, pad);
    }
}

// UB -> GM: exactly `len` elements per row (neighbouring GM data is never written).
template <typename T>
__aicore__ inline void RowsOut(const GlobalTensor<T>& dst, const LocalTensor<T>& src, int64_t rows, int64_t len,
                               int64_t gmStride, int64_t ubStride) {
    const int64_t eb = static_cast<int64_t>(sizeof(T));
    if ((len * eb) % 32 == 0 && (rows == 1 || (gmStride == len && ubStride == len))) {
        DataCopy(dst, src, static_cast<uint32_t>(rows * len));
        return;
    }
    const int64_t padded = (len * eb + 31) / 32 * 32;
    for (int64_t r0 = 0; r0 < rows; r0 += 4095) {
        const int64_t n = acx_vmin(4095, rows - r0);
        DataCopyExtParams p{static_cast<uint16_t>(n), static_cast<uint32_t>(len * eb),
                            static_cast<uint32_t>((ubStride * eb - padded) / 32),
                            static_cast<uint32_t>((gmStride - len) * eb), 0};
        DataCopyPad(dst[r0 * gmStride], src[r0 * ubStride], p);
    }
}
""".strip("\n")



def _f(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        raise DslError("infinite or NaN constants are not supported in the cube DSL")
    r = repr(float(v))
    return f"{r}f" if ("e" in r or "." in r) else f"{r}.0f"


@dataclass
class _V:
    """A value during code generation."""

    form: str  # tile | col | group | members | scalar
    size: int
    ref: str  # LocalTensor expression, or a C++ float expression for scalars
    dtype: str = "f32"
    buf: str | None = None  # pool buffer owned by this (unnamed) value
    k: int = -1  # chunk loop index of tiles / cols
    deps: tuple[str, ...] = ()  # pool buffers to release once the consumer is done


class _VecGen:
    """Generates the AIV kernel of the rows stage and its UB plan."""

    def __init__(self, p: ir.Program, checked: TypedProgram, chunks: list[ir.InnerLoop],
                 vec_tensors: dict[str, bool]):
        self.p = p
        self.ck = checked
        self.v = p.vector
        self.chunks = chunks
        self.vec_tensors = vec_tensors
        self.lines: list[str] = []
        self.ind = 2
        self.bufs: list[Buf] = []  # queues and TBufs, in InitBuffer order
        self.pool_cls: dict[str, tuple] = {}  # pool buffer -> class
        self.free: dict[tuple, list[str]] = {}
        self.queue_of: dict[tuple, Buf] = {}
        self.tables: dict[tuple, str] = {}
        self.init_lines: list[str] = []
        self.scratch_need: list[str] = []
        self.counter = 0
        self.env: dict[str, _V] = {}
        self.named_buf: dict[str, str] = {}
        self.loads: dict[tuple, _V] = {}
        self.k = -1  # current chunk loop index
        self.outer_names: set[str] = set()
        self.hoisted: dict[str, str] = {}
        self.dying: set[str] = set()
        rows = self.v.tile
        self.rows_max = max(p.tunable(rows).domain.values()) if isinstance(rows, str) else int(rows)

    # ------------------------------------------------------------ buffers
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def _class_bytes(self, cls: tuple) -> str:
        kind = cls[0]
        if kind == "tile":
            return f"tileRows * ch{cls[1]} * 4"
        if kind == "col":
            return f"ch{cls[1]} * 4"
        if kind == "group":
            return f"{cls[1]} * rpad * 4"
        if kind == "rawgroup":
            return f"{cls[1]} * rpad * {DTYPE_BYTES[cls[2]]}"
        raise AssertionError(cls)

    def alloc(self, cls: tuple) -> str:
        lst = self.free.setdefault(cls, [])
        if lst:
            return lst.pop()
        if cls[0] in ("tile", "col"):  # borrow a free buffer of another chunks loop, grown to fit
            for other, olst in self.free.items():
                if other[0] == cls[0] and olst:
                    name = olst.pop()
                    need = self._class_bytes(cls)
                    i = next(j for j, b in enumerate(self.bufs) if b.name == f"tb_{name}")
                    b = self.bufs[i]
                    if need not in _terms(b.bytes_expr):
                        self.bufs[i] = Buf(b.name, b.pos, f"max({b.bytes_expr}, {need})", b.depth, b.dtype)
                    return name
        name = f"t{len(self.pool_cls)}"
        self.pool_cls[name] = cls
        self.bufs.append(Buf(f"tb_{name}", "VECCALC", self._class_bytes(cls)))
        return name

    def release(self, name: str | None) -> None:
        if name is not None and name not in self.named_buf.values():
            lst = self.free.setdefault(self.pool_cls[name], [])
            if name not in lst:
                lst.append(name)

    def done(self, v: _V) -> None:
        """The consumer of ``v`` has emitted its instruction: release its temporaries."""
        if v.buf is not None:
            self.release(v.buf)
        for d in v.deps:
            self.release(d)

    def queue(self, key: tuple, pos: str, dtype: str, bytes_expr: str) -> Buf:
        if key not in self.queue_of:
            b = Buf(f"q{len(self.queue_of)}", pos, bytes_expr, size_expr(self.v.depth), dtype)
            self.queue_of[key] = b
            self.bufs.append(b)
        b = self.queue_of[key]
        if bytes_expr not in _terms(b.bytes_expr):  # shared by several loops: the largest use
            nb = Buf(b.name, b.pos, f"max({b.bytes_expr}, {bytes_expr})", b.depth, b.dtype)
            self.bufs[self.bufs.index(b)] = nb
            self.queue_of[key] = b = nb
        return b

    def tbuf(self, name: str, bytes_expr: str) -> str:
        if not any(b.name == name for b in self.bufs):
            self.bufs.append(Buf(name, "VECCALC", bytes_expr))
        return name

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ------------------------------------------------------------ geometry
    def count(self, v: _V) -> str:
        if v.form == "tile":
            return f"r * td_.ch{v.k}"
        if v.form == "col":
            return f"td_.ch{v.k}"
        return f"{v.size} * td_.rpad"

    def cls_of(self, v: _V) -> tuple:
        if v.form == "tile":
            return ("tile", v.k)
        if v.form == "col":
            return ("col", v.k)
        return ("group", v.size)

    def new_like(self, form: str, size: int, k: int) -> _V:
        v = _V(form, size, "", k=k)
        name = self.alloc(self.cls_of(v))
        v.ref, v.buf = name, name
        return v

    # ------------------------------------------------------------ program
    def run(self) -> None:
        v = self.v
        self.emit("const int64_t core = GetBlockIdx();")
        self.emit("const int64_t myRows = td_.baseRows + (core < td_.bigRows ? 1 : 0);")
        self.emit("const int64_t row0 = core * td_.baseRows + acx_vmin(core, td_.bigRows);")
        self.emit("for (int64_t it = 0; it < myRows; it += td_.tileRows) {")
        self.ind += 1
        self.emit("const int64_t r = acx_vmin(td_.tileRows, myRows - it);  // rows in this tile")
        self.emit("const int64_t gr = row0 + it;  // first row of this tile")
        self._block(v.body)
        self.ind -= 1
        self.emit("}")

    def _names_read(self, body) -> set[str]:
        out = set()
        for e in ir.body_exprs(body):
            if isinstance(e, ir.Var):
                out.add(e.name)
        for s in body:
            if isinstance(s, ir.InnerLoop):
                out |= self._assigned(s.body)
        return out

    def _assigned(self, body) -> set[str]:
        return {s.target for s in body if isinstance(s, ir.Assign)}

    def _liveness(self, body) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
        """(free_after, dying): names whose binding is released after statement i, and names
        read exactly once at statement i that are never read again (their buffer may take the
        result in place)."""
        cur: dict[str, int] = {}
        born: dict[int, tuple[str, int]] = {}
        last: dict[int, int] = {}
        once: dict[tuple[int, int], int] = {}
        for i, s in enumerate(body):
            if isinstance(s, ir.InnerLoop):
                reads = {n: 2 for n in self._names_read([s])}
            else:
                reads = {}
                for e in {id(x): x for x in ir.walk_exprs(s.value)}.values():
                    if isinstance(e, ir.Var):
                        reads[e.name] = reads.get(e.name, 0) + 1
            for n, cnt in reads.items():
                if n in cur:
                    last[cur[n]] = i
                    once[(cur[n], i)] = cnt
            if isinstance(s, ir.Assign):
                b = len(born) + 1
                born[b] = (s.target, i)
                cur[s.target] = b
        free_after: dict[int, set[str]] = {}
        dying: dict[int, set[str]] = {}
        for b, (n, i0) in born.items():
            nxt = [i1 for b1, (n1, i1) in born.items() if n1 == n and b1 > b]
            j = last.get(b, i0)
            if b in last and once.get((b, j)) == 1 and not isinstance(body[j], ir.InnerLoop):
                dying.setdefault(j, set()).add(n)
            if not nxt or min(nxt) != j:
                free_after.setdefault(j, set()).add(n)
        return free_after, dying

    def _block(self, body) -> None:
        dead, dying = self._liveness(body)
        local: set[str] = set()
        for i, s in enumerate(body):
            self.emit(f"// DSL line {s.loc.line}")
            self.dying = {n for n in dying.get(i, ()) if n in local and n in self.named_buf}
            if isinstance(s, ir.Assign):
                if not self._assign(s):
                    local.add(s.target)
            elif isinstance(s, ir.Store):
                self._store(s)
            else:
                saved = self.outer_names
                self._chunks(s)
                self.outer_names = saved
            self.dying = set()
            for n in sorted(dead.get(i, ())):
                if n in local and n in self.env:
                    b = self.named_buf.pop(n, None)
                    if b is not None:
                        self.release(b)
                    self.env.pop(n, None)
                    local.discard(n)

    def _bind(self, name: str, val: _V) -> None:
        if val.form == "scalar":
            raise DslError(f"'{name}' would be a scalar")
        if val.buf is None or val.deps:
            # a view, an alias or a read-only load: keep loads as they are (they live for the
            # whole chunk iteration), copy anything else into a buffer of its own
            if val.ref.startswith("ld") and not val.deps:
                self.env[name] = val
                return
            cp = self.new_like(val.form, val.size, val.k)
            self.emit(f"DataCopy({cp.ref}, {val.ref}, static_cast<uint32_t>({self.count(val)}));")
            self.done(val)
            val = cp
        old = self.named_buf.get(name)
        self.named_buf[name] = val.buf
        if old is not None and old != val.buf:
            self.release(old)
        self.env[name] = _V(val.form, val.size, val.ref, val.dtype, None, val.k)

    def _assign(self, s: ir.Assign) -> bool:
        """Emit an assignment; True if it updated a value carried across chunks (accumulator)."""
        acc = self.env.get(s.target)
        carried = acc is not None and self.k >= 0 and s.target in self.outer_names
        if carried:
            val = self.ev(s.value, dst=acc.ref)
            if val.ref != acc.ref:
                self.emit(f"DataCopy({acc.ref}, {val.ref}, static_cast<uint32_t>({self.count(acc)}));")
                self.done(val)
            return True
        val = self.ev(s.value)
        self._bind(s.target, val)
        return False

    # ------------------------------------------------------------ chunks
    def _chunk_index(self, ch: ir.InnerLoop) -> int:
        return next(i for i, c in enumerate(self.chunks) if c is ch)

    def _hoist_row_scalars(self, ch: ir.InnerLoop) -> None:
        """Per-row values from outside the chunks loop that multiply tiles inside it are read
        from UB into scalar registers once per tile (one V->S sync), not once per chunk."""
        changed = self._assigned(ch.body)
        refs: list[str] = []
        for e in ir.body_exprs(ch.body):
            if not isinstance(e, ir.Binary):
                continue
            fa, fb = self.ck.type_of(e.lhs).form, self.ck.type_of(e.rhs).form
            if {fa, fb} != {"tile", "row"}:
                continue
            g = e.lhs if fa == "row" else e.rhs
            base = g.arg if isinstance(g, ir.Index) else g
            if not isinstance(base, ir.Var) or base.name not in self.env or base.name in changed:
                continue
            ref = self.ev(g).ref
            if ref not in refs and ref not in self.hoisted:
                refs.append(ref)
        if not refs:
            return
        rmax = self.rows_max
        self.emit("SyncVS();")
        names = []
        for ref in refs:
            arr = self.fresh("rs")
            self.hoisted[ref] = arr
            names.append((arr, ref))
            self.emit(f"float {arr}[{rmax}];  // one value per row, read once per tile")
        self.emit("for (int64_t j = 0; j < r; ++j) {")
        for arr, ref in names:
            self.emit(f"    {arr}[j] = {ref}.GetValue(j);")
        self.emit("}")

    def _chunks(self, ch: ir.InnerLoop) -> None:
        k = self._chunk_index(ch)
        self.hoisted = {}
        self._hoist_row_scalars(ch)
        self.outer_names = set(self.env)
        self.k = k
        self.emit(f"for (int64_t c0 = 0; c0 < td_.pw{k}; c0 += td_.ch{k}) {{")
        self.ind += 1
        self.emit(f"const int64_t cw = acx_vmin(td_.ch{k}, td_.pw{k} - c0);  // columns in this chunk")
        keys = []
        for e in ir.body_exprs(ch.body):
            if isinstance(e, ir.Load) and e.mode in ("tile", "bcast"):
                key = (e.tensor, e.mode, e.part)
                if key not in keys:
                    keys.append(key)
        self.loads = {}
        self.load_q: dict[tuple, str] = {}
        self.store_n = 0
        for i, key in enumerate(keys):
            self._issue_chunk_load(key, k, i)
        for key in keys:
            v = self.loads[key]
            self.emit(f"{v.ref} = {self.load_q[key]}.DeQue<{CTYPE[v.dtype]}>();")
        for key in keys:
            if self.p.is_workspace(key[0]):
                self._sum_splits(self.loads[key], key, k)
        before = dict(self.named_buf)
        self._block(ch.body)
        for n in list(self.named_buf):
            if n not in before:
                self.release(self.named_buf.pop(n))
                self.env.pop(n, None)
        for key in keys:
            self.emit(f"{self.load_q[key]}.FreeTensor({self.loads[key].ref});")
        self.loads = {}
        self.ind -= 1
        self.emit("}")
        self.k = -1

    def _gm_off(self, tensor: str, part: int | None, k: int) -> str:
        off = f"gr * td_.{mangle('width', tensor)} + c0"
        if part:
            off += f" + {part} * td_.pw{k}"
        return off

    def _issue_chunk_load(self, key: tuple, k: int, ordinal: int) -> None:
        tensor, mode, part = key
        dt = self.p.dtype_of(tensor)
        eb = DTYPE_BYTES[dt]
        T = CTYPE[dt]
        nbytes = f"tileRows * ch{k} * {eb}" if mode == "tile" else f"ch{k} * {eb}"
        q = self.queue(("in", mode, dt, ordinal), "VECIN", dt, nbytes)
        self.load_q[key] = q.name
        name = self.fresh("ld")
        self.emit(f"LocalTensor<{T}> {name} = {q.name}.AllocTensor<{T}>();")
        if mode == "tile":
            self.emit(f"RowsIn({name}, {mangle('gm', tensor)}[{self._gm_off(tensor, part, k)}], r, cw, td_.{mangle('width', tensor)}, td_.ch{k});")
        else:
            self.emit(f"RowsIn({name}, {mangle('gm', tensor)}[c0], 1, cw, cw, td_.ch{k});")
        self.emit(f"{q.name}.EnQue({name});")
        self.loads[key] = _V("tile" if mode == "tile" else "col", 1, name, dt, None, k)

    def _sum_splits(self, v: _V, key: tuple, k: int) -> None:
        tensor, _, part = key
        x = self.tbuf("tb_wsx", "tileRows * chmax * 4")
        self.emit("for (int64_t s = 1; s < td_.splits; ++s) {  // split-K partial results")
        self.emit(f"    LocalTensor<float> wsx = {x}.Get<float>();")
        self.emit(f"    RowsIn(wsx, {mangle('gm', tensor)}[s * td_.Bt * td_.M * td_.N + {self._gm_off(tensor, part, k)}], r, cw, "
                  f"td_.{mangle('width', tensor)}, td_.ch{k});")
        self.emit("    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);")
        self.emit(f"    Add({v.ref}, {v.ref}, wsx, static_cast<int32_t>(r * td_.ch{k}));")
        self.emit("    SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);")
        self.emit("}")

    # ------------------------------------------------------------ stores
    def _store(self, s: ir.Store) -> None:
        t = self.ck.type_of(s.value)
        dt = self.p.dtype_of(s.tensor)
        T = CTYPE[dt]
        eb = DTYPE_BYTES[dt]
        value = s.value
        if t.form == "tile":
            k = self.k
            q = self.queue(("out", dt, self.store_n), "VECOUT", dt, f"tileRows * ch{k} * {eb}")
            self.store_n += 1
            o = self.fresh("st")
            self.emit(f"LocalTensor<{T}> {o} = {q.name}.AllocTensor<{T}>();")
            self._into(o, dt, value, "tile")
            self.emit(f"{q.name}.EnQue({o});")
            self.emit(f"{o} = {q.name}.DeQue<{T}>();")
            self.emit(f"RowsOut({mangle('gm', s.tensor)}[{self._gm_off(s.tensor, s.part, k)}], {o}, r, cw, td_.{mangle('width', s.tensor)}, "
                      f"td_.ch{k});")
            self.emit(f"{q.name}.FreeTensor({o});")
            return
        # per-row values: [G][rpad] in UB -> [rows, G] in GM through a Gather
        g = t.size
        q = self.queue((s.tensor, "outg", None, -1), "VECOUT", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        if dt == "f32":
            src = self.ev(value)
            raw = src.ref
        else:
            if not isinstance(value, ir.Cast):
                raise DslError(f"a {dt} store needs cast(v, {dt}) at the top of the value", value.loc)
            src = self.ev(value.arg)
            rawname = self.alloc(("rawgroup", g, dt))
            raw = f"{rawname}_raw"
            self.emit(f"Cast({raw}, {src.ref}, RoundMode::CAST_RINT, static_cast<uint32_t>({g} * td_.rpad));")
        tbl = self._store_table(g, eb)
        o = self.fresh("st")
        self.emit(f"LocalTensor<{T}> {o} = {q.name}.AllocTensor<{T}>();")
        self.emit(f"Gather({o}, {raw}, {tbl}, 0, static_cast<uint32_t>(r * {g}));  // [G][rows] -> [rows][G]")
        self.emit(f"{q.name}.EnQue({o});")
        self.emit(f"{o} = {q.name}.DeQue<{T}>();")
        self.emit(f"RowsOut({mangle('gm', s.tensor)}[gr * {g}], {o}, 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.FreeTensor({o});")
        self.done(src)
        if dt != "f32":
            self.release(rawname)

    def _into(self, o: str, dt: str, value: ir.Expr, form: str) -> None:
        """Evaluate ``value`` into the output tensor ``o`` (dtype ``dt``)."""
        if dt == "f32":
            v = self.ev(value, dst=o)
            if v.ref != o:
                self.emit(f"DataCopy({o}, {v.ref}, static_cast<uint32_t>({self.count(v)}));")
                self.done(v)
            return
        if not isinstance(value, ir.Cast):
            raise DslError(f"a {dt} store needs cast(v, {dt}) at the top of the value", value.loc)
        v = self.ev(value.arg)
        self.emit(f"Cast({o}, {v.ref}, RoundMode::CAST_RINT, static_cast<uint32_t>({self.count(v)}));")
        self.done(v)

    def _store_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets for Gather: out[j*G + m] = in[m*rpad + j]."""
        key = ("S", g, eb)
        if key in self.tables:
            return self.tables[key]
        name = f"tblS{g}_{eb}"
        self.tbuf(f"tb_{name}", f"align_up(tileRows * {g}, 64) * 4")
        self.scratch_need.append(f"3 * align_up(tileRows * {g}, 64) * 4")
        n = f"static_cast<int32_t>(td_.tileRows * {g})"
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = tb_{name}.Get<uint32_t>();",
            "{",
            "    LocalTensor<float> f0 = tb_scratch.Get<float>();",
            f"    LocalTensor<float> f1 = f0[(td_.tileRows * {g} + 63) / 64 * 64];",
            f"    LocalTensor<float> f2 = f0[2 * ((td_.tileRows * {g} + 63) / 64 * 64)];",
            f"    LocalTensor<int32_t> ti = tb_{name}.Get<int32_t>();",
            f"    CreateVecIndex(f0, 0.0f, static_cast<uint32_t>({n}));",
            f"    Adds(f1, f0, 0.5f, {n});",
            f"    Muls(f1, f1, {_f(1.0 / g)}, {n});",
            f"    Cast(ti, f1, RoundMode::CAST_FLOOR, static_cast<uint32_t>({n}));  // j = i / G",
            f"    Cast(f1, ti, RoundMode::CAST_NONE, static_cast<uint32_t>({n}));",
            f"    Muls(f2, f1, {_f(float(g))}, {n});",
            f"    Sub(f0, f0, f2, {n});  // m = i % G",
            f"    Muls(f0, f0, static_cast<float>(td_.rpad * {eb}), {n});",
            f"    Muls(f1, f1, {_f(float(eb))}, {n});",
            f"    Add(f0, f0, f1, {n});",
            f"    Cast(ti, f0, RoundMode::CAST_RINT, static_cast<uint32_t>({n}));",
            "}",
        ]
        self.tables[key] = name
        return name

    def _load_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets j*G*eb: Gather of member m from [rows][G] uses base m*eb."""
        key = ("L", g, eb)
        if key in self.tables:
            return self.tables[key]
        name = f"tblL{g}_{eb}"
        self.tbuf(f"tb_{name}", "align_up(tileRows, 64) * 4")
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = tb_{name}.Get<uint32_t>();",
            f"ArithProgression(tb_{name}.Get<int32_t>(), static_cast<int32_t>(0), static_cast<int32_t>({g * eb}), "
            "static_cast<int32_t>(td_.tileRows));",
        ]
        self.tables[key] = name
        return name

    # ------------------------------------------------------------ expressions
    def ev(self, e: ir.Expr, dst: str | None = None) -> _V:
        if isinstance(e, ir.Const):
            return _V("scalar", 1, _f(e.value))
        if isinstance(e, ir.ScalarRef):
            return _V("scalar", 1, f"td_.{mangle('sc', e.name)}")
        if isinstance(e, ir.Extent):
            return _V("scalar", 1, "static_cast<float>(td_.vW)")
        if isinstance(e, ir.Var):
            v = self.env.get(e.name)
            if v is None:
                raise DslError(f"'{e.name}' is not defined here", e.loc)
            own = self.named_buf.get(e.name) if e.name in self.dying else None
            return _V(v.form, v.size, v.ref, v.dtype, own if own == v.ref else None, v.k)
        if isinstance(e, ir.Load):
            return self._load(e)
        if isinstance(e, ir.Cast):
            a = self.ev(e.arg)
            if e.dtype != "f32":
                raise DslError(f"cast(v, {e.dtype}) is only allowed as the value of a store", e.loc)
            if a.dtype == "f32":
                return a
            out = self._dst(a, dst, reuse=False)
            self.emit(f"Cast({out.ref}, {a.ref}, RoundMode::CAST_NONE, static_cast<uint32_t>({self.count(a)}));")
            self.done(a)
            return out
        if isinstance(e, ir.Index):
            a = self.ev(e.arg)
            deps = a.deps + ((a.buf,) if a.buf else ())
            return _V(a.form, e.stop - e.start, f"{a.ref}[{e.start} * td_.rpad]", "f32", None, a.k, deps)
        if isinstance(e, ir.Fill):
            if e.kind == "tile":
                out = self._dst(_V("tile", 1, "", k=self.k), dst, reuse=False)
            else:
                out = self._dst(_V("group", 1, ""), dst, reuse=False)
            self.emit(f"Duplicate({out.ref}, {_f(e.value)}, static_cast<int32_t>({self.count(out)}));")
            return out
        if isinstance(e, ir.RowReduce):
            a = self.ev(e.arg)
            out = self._dst(_V("group", 1, ""), dst, reuse=False)
            work = self.tbuf("tb_work", "wkmax")
            fn = REDUCE[e.op]
            self.emit("{")
            self.emit(f"    LocalTensor<float> work = {work}.Get<float>();")
            self.emit("    for (int64_t j = 0; j < r; ++j)")
            self.emit(f"        {fn}({out.ref}[j], {a.ref}[j * td_.ch{a.k}], work, static_cast<int32_t>(cw));")
            self.emit("}")
            self.done(a)
            return out
        if isinstance(e, ir.Sinkhorn):
            return self._sinkhorn(e, dst)
        if isinstance(e, ir.LeakyRelu):
            a = self.ev(e.arg)
            out = self._dst(a, dst)
            self.emit(f"LeakyRelu({out.ref}, {a.ref}, {_f(e.slope)}, static_cast<int32_t>({self.count(a)}));")
            self._finish(a, out)
            return out
        if isinstance(e, ir.Unary):
            return self._unary(e, dst)
        if isinstance(e, ir.Power):
            return self._power(e, dst)
        if isinstance(e, ir.Binary):
            return self._binary(e, dst)
        raise DslError(f"cannot lower {type(e).__name__}", e.loc)

    def _dst(self, like: _V, dst: str | None, reuse: bool = True) -> _V:
        """Where a result of ``like``'s shape goes: ``dst``, ``like`` itself if it is an owned
        temporary (in place), or a fresh pool buffer."""
        if dst is not None:
            return _V(like.form, like.size, dst, "f32", None, like.k)
        if reuse and like.buf is not None and like.ref == like.buf and not like.deps and like.dtype == "f32":
            return _V(like.form, like.size, like.ref, "f32", like.buf, like.k)
        return self.new_like(like.form, like.size, like.k)

    def _finish(self, a: _V, out: _V) -> None:
        if a.buf is not None and a.buf == out.buf:
            for d in a.deps:
                self.release(d)
            return
        self.done(a)

    def _load(self, e: ir.Load) -> _V:
        if e.mode in ("tile", "bcast"):
            v = self.loads.get((e.tensor, e.mode, e.part))
            if v is None:
                raise DslError("load outside its chunks loop", e.loc)
            return _V(v.form, 1, v.ref, v.dtype, None, v.k)
        dt = self.p.dtype_of(e.tensor)
        T = CTYPE[dt]
        eb = DTYPE_BYTES[dt]
        g = e.size
        out = self.new_like("group", g, -1)
        if e.mode == "members":
            q = self.queue((e.tensor, "members", None, -1), "VECIN", dt, f"align_up({g}, 16) * {eb}")
            m = self.fresh("ldm")
            self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
            self.emit(f"RowsIn({m}, {mangle('gm', e.tensor)}[0], 1, {g}, {g}, {g});")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{T}>();")
            src = m
            if dt != "f32":
                mf = self.tbuf(f"tb_memf{g}", f"align_up({g}, 64) * 4")
                src = self.fresh("mf")
                self.emit(f"LocalTensor<float> {src} = {mf}.Get<float>();")
                self.emit(f"Cast({src}, {m}, RoundMode::CAST_NONE, static_cast<uint32_t>({g}));")
            self.emit("SyncVS();")
            self.emit(f"for (int32_t m = 0; m < {g}; ++m) Duplicate({out.ref}[m * td_.rpad], {src}.GetValue(m), "
                      "static_cast<int32_t>(td_.rpad));  // one constant per member, broadcast over rows")
            self.emit(f"{q.name}.FreeTensor({m});")
            out.form = "members"
            return out
        if e.mode == "cols":
            q = self.queue((e.tensor, "cols", None, -1), "VECIN", dt, f"{g} * rpad * {eb}")
            m = self.fresh("ldc")
            self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
            self.emit(f"RowsIn({m}, {mangle('gm', e.tensor)}[gr], {g}, r, td_.vN, td_.rpad);  // [G, rows] columns of this tile")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{T}>();")
            if self.p.is_workspace(e.tensor):
                x = self.tbuf(f"tb_wsc{g}", f"{g} * rpad * 4")
                self.emit("for (int64_t s = 1; s < td_.splits; ++s) {  // split-K partial results")
                self.emit(f"    LocalTensor<float> wsx = {x}.Get<float>();")
                self.emit(f"    RowsIn(wsx, {mangle('gm', e.tensor)}[s * td_.Bt * td_.M * td_.N + gr], {g}, r, td_.vN, td_.rpad);")
                self.emit("    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);")
                self.emit(f"    Add({m}, {m}, wsx, static_cast<int32_t>({g} * td_.rpad));")
                self.emit("    SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);")
                self.emit("}")
            if dt == "f32":
                self.emit(f"DataCopy({out.ref}, {m}, static_cast<uint32_t>({g} * td_.rpad));")
            else:
                self.emit(f"Cast({out.ref}, {m}, RoundMode::CAST_NONE, static_cast<uint32_t>({g} * td_.rpad));")
            self.emit(f"{q.name}.FreeTensor({m});")
            return out
        # group: [rows, G] row-major in GM -> [G][rpad] through a Gather per member
        q = self.queue((e.tensor, "group", None, -1), "VECIN", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        m = self.fresh("ldg")
        tbl = self._load_table(g, eb)
        self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
        self.emit(f"RowsIn({m}, {mangle('gm', e.tensor)}[gr * {g}], 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.EnQue({m});")
        self.emit(f"{m} = {q.name}.DeQue<{T}>();")
        if dt == "f32":
            self.emit(f"for (int32_t mm = 0; mm < {g}; ++mm) Gather({out.ref}[mm * td_.rpad], {m}, {tbl}, "
                      f"static_cast<uint32_t>(mm * {eb}), static_cast<uint32_t>(r));")
        else:
            raw = self.alloc(("rawgroup", g, dt))
            self.emit(f"for (int32_t mm = 0; mm < {g}; ++mm) Gather({raw}_raw[mm * td_.rpad], {m}, {tbl}, "
                      f"static_cast<uint32_t>(mm * {eb}), static_cast<uint32_t>(r));")
            self.emit(f"Cast({out.ref}, {raw}_raw, RoundMode::CAST_NONE, static_cast<uint32_t>({g} * td_.rpad));")
            self.release(raw)
        self.emit(f"{q.name}.FreeTensor({m});")
        return out

    # ---- powers
    def _power(self, e: ir.Power, dst: str | None) -> _V:
        """x ** n (n = 2..4) from one evaluation of x: x*x, (x*x)*x or (x*x)*(x*x)."""
        a = self.ev(e.base)
        if a.form == "scalar":  # the base once, in a local: nested powers stay linear
            v = self.fresh("pw")
            self.emit(f"const float {v} = {a.ref};")
            return _V("scalar", 1, "(" + " * ".join([v] * e.n) + ")")
        n = f"static_cast<int32_t>({self.count(a)})"
        if e.n == 2:
            out = self._dst(a, dst)
            self.emit(f"Mul({out.ref}, {a.ref}, {a.ref}, {n});  // ** 2")
            self._finish(a, out)
            return out
        sq = self.new_like(a.form, a.size, a.k) if e.n == 3 else self._dst(a, None)
        self.emit(f"Mul({sq.ref}, {a.ref}, {a.ref}, {n});  // ** {e.n}")
        if e.n == 4:
            self._finish(a, sq)
        out = self._dst(sq, dst)
        self.emit(f"Mul({out.ref}, {sq.ref}, {a.ref if e.n == 3 else sq.ref}, {n});")
        self._finish(sq, out)
        if e.n == 3:
            self.done(a)
        return out

    # ---- unary
    def _unary(self, e: ir.Unary, dst: str | None) -> _V:
        a = self.ev(e.arg)
        n = f"static_cast<int32_t>({self.count(a)})"
        op = e.op
        if op in VEC1:
            out = self._dst(a, dst)
            self.emit(f"{VEC1[op]}({out.ref}, {a.ref}, {n});")
            self._finish(a, out)
            return out
        if op == "neg":
            out = self._dst(a, dst)
            self.emit(f"Muls({out.ref}, {a.ref}, -1.0f, {n});")
            self._finish(a, out)
            return out
        if op in ("sigmoid", "silu", "tanh"):
            out = self._dst(a, dst, reuse=op != "silu")
            scale = -2.0 if op == "tanh" else -1.0
            self.emit(f"Muls({out.ref}, {a.ref}, {_f(scale)}, {n});  // {op}")
            self.emit(f"Exp({out.ref}, {out.ref}, {n});")
            self.emit(f"Adds({out.ref}, {out.ref}, 1.0f, {n});")
            self.emit(f"Reciprocal({out.ref}, {out.ref}, {n});")
            if op == "silu":
                self.emit(f"Mul({out.ref}, {out.ref}, {a.ref}, {n});")
            if op == "tanh":
                self.emit(f"Muls({out.ref}, {out.ref}, 2.0f, {n});")
                self.emit(f"Adds({out.ref}, {out.ref}, -1.0f, {n});")
            self._finish(a, out)
            return out
        if op in ("gelu", "erf"):
            # q(u) = (a1 t + ... + a5 t^5) exp(-u^2), t = 1 / (1 + p u)  (A&S 7.1.26, |err| <= 1.5e-7)
            # erf(x) = sign(x) (1 - q(|x|)); gelu(x) = relu(x) - 0.5 |x| q(|x| / sqrt 2)
            u = self.new_like(a.form, a.size, a.k)
            tt = self.new_like(a.form, a.size, a.k)
            pz = self.new_like(a.form, a.size, a.k)
            self.emit(f"Abs({u.ref}, {a.ref}, {n});  // {op}")
            if op == "gelu":
                self.emit(f"Muls({u.ref}, {u.ref}, {_f(1 / math.sqrt(2.0))}, {n});")
            self.emit(f"Muls({tt.ref}, {u.ref}, {_f(ERF_P)}, {n});")
            self.emit(f"Adds({tt.ref}, {tt.ref}, 1.0f, {n});")
            self.emit(f"Reciprocal({tt.ref}, {tt.ref}, {n});")
            self.emit(f"Muls({pz.ref}, {tt.ref}, {_f(ERF_A[4])}, {n});")
            for c in reversed(ERF_A[:4]):
                self.emit(f"Adds({pz.ref}, {pz.ref}, {_f(c)}, {n});")
                self.emit(f"Mul({pz.ref}, {pz.ref}, {tt.ref}, {n});")
            self.emit(f"Mul({tt.ref}, {u.ref}, {u.ref}, {n});")
            self.emit(f"Muls({tt.ref}, {tt.ref}, -1.0f, {n});")
            self.emit(f"Exp({tt.ref}, {tt.ref}, {n});")
            self.emit(f"Mul({pz.ref}, {pz.ref}, {tt.ref}, {n});  // q")
            out = self._dst(a, dst, reuse=False)
            if op == "gelu":
                self.emit(f"Abs({u.ref}, {a.ref}, {n});")
                self.emit(f"Mul({pz.ref}, {pz.ref}, {u.ref}, {n});")
                self.emit(f"Muls({pz.ref}, {pz.ref}, -0.5f, {n});")
                self.emit(f"Relu({u.ref}, {a.ref}, {n});")
                self.emit(f"Add({out.ref}, {pz.ref}, {u.ref}, {n});")
            else:
                self.emit(f"Muls({pz.ref}, {pz.ref}, -1.0f, {n});")
                self.emit(f"Adds({pz.ref}, {pz.ref}, 1.0f, {n});  // 1 - q")
                self.emit(f"Adds({tt.ref}, {u.ref}, 1e-30f, {n});")
                self.emit(f"Div({tt.ref}, {a.ref}, {tt.ref}, {n});  // sign(x)")
                self.emit(f"Mul({out.ref}, {pz.ref}, {tt.ref}, {n});")
            for b in (u, tt, pz):
                self.release(b.buf)
            self.done(a)
            return out
        raise DslError(f"cannot lower {op}", e.loc)

    # ---- binary
    def _scalar_op(self, op: str, d: str, x: str, s: str, n: str, scalar_left: bool) -> list[str]:
        s = f"static_cast<float>({s})"
        if op in ("add", "mul", "max", "min") or not scalar_left:
            if op == "add":
                return [f"Adds({d}, {x}, {s}, {n});"]
            if op == "sub":
                return [f"Adds({d}, {x}, -({s}), {n});"]
            if op == "mul":
                return [f"Muls({d}, {x}, {s}, {n});"]
            if op == "div":
                return [f"Muls({d}, {x}, 1.0f / ({s}), {n});"]
            return [f"{'Maxs' if op == 'max' else 'Mins'}({d}, {x}, {s}, {n});"]
        if op == "sub":  # s - x
            return [f"Muls({d}, {x}, -1.0f, {n});", f"Adds({d}, {d}, {s}, {n});"]
        return [f"Reciprocal({d}, {x}, {n});", f"Muls({d}, {d}, {s}, {n});"]  # s / x

    def _binary(self, e: ir.Binary, dst: str | None) -> _V:
        a = self.ev(e.lhs)
        b = a if e.rhs is e.lhs else self.ev(e.rhs)  # x ** 2: one operand node, evaluated once
        op = e.op
        fa, fb = a.form, b.form
        # scalar operand
        if "scalar" in (fa, fb):
            x, s = (b, a) if fa == "scalar" else (a, b)
            out = self._dst(x, dst)
            n = f"static_cast<int32_t>({self.count(x)})"
            for line in self._scalar_op(op, out.ref, x.ref, s.ref, n, fa == "scalar"):
                self.emit(line)
            self._finish(x, out)
            return out
        shape = {fa, fb}
        if fa == fb and (fa != "group" or a.size == b.size) or shape == {"group", "members"} and a.size == b.size:
            big = a if a.size >= b.size else b
            if fa == "col" and fb == "col":
                raise DslError("two broadcast rows make no tile", e.loc)
            out = self._dst(a, dst) if a.buf else self._dst(b, dst)
            self.emit(f"{VEC2[op]}({out.ref}, {a.ref}, {b.ref}, static_cast<int32_t>({self.count(big)}));")
            self._finish2(a, b, out)
            if fa == "members" and fb == "members":
                out.form = "members"
            elif "group" in shape:
                out.form = "group"
            return out
        if shape <= {"group", "members"}:  # a group of G with one value per row (broadcast over members)
            big, one = (a, b) if a.size >= b.size else (b, a)
            out = self._dst(big, dst)
            out.form = "group"
            for m in range(big.size):
                lhs = f"{a.ref}[{m} * td_.rpad]" if a is big else a.ref
                rhs = f"{b.ref}[{m} * td_.rpad]" if b is big else b.ref
                self.emit(f"{VEC2[op]}({out.ref}[{m} * td_.rpad], {lhs}, {rhs}, static_cast<int32_t>(td_.rpad));")
            self._finish2(a, b, out)
            return out
        if shape == {"tile", "col"}:
            t_, c_ = (a, b) if fa == "tile" else (b, a)
            out = self._dst(t_, dst)
            k = t_.k
            lhs = f"{a.ref}[j * td_.ch{k}]" if a is t_ else a.ref
            rhs = f"{b.ref}[j * td_.ch{k}]" if b is t_ else b.ref
            self.emit("for (int64_t j = 0; j < r; ++j)  // one row vector broadcast over the rows")
            self.emit(f"    {VEC2[op]}({out.ref}[j * td_.ch{k}], {lhs}, {rhs}, static_cast<int32_t>(cw));")
            self._finish2(a, b, out)
            return out
        if shape == {"tile", "group"}:
            t_, g_ = (a, b) if fa == "tile" else (b, a)
            out = self._dst(t_, dst)
            k = t_.k
            arr = self.hoisted.get(g_.ref)
            if arr is None:
                self.emit("SyncVS();")
            self.emit("for (int64_t j = 0; j < r; ++j) {  // one value per row")
            self.emit(f"    const float sv = {arr + '[j]' if arr else g_.ref + '.GetValue(j)'};")
            for line in self._scalar_op(op, f"{out.ref}[j * td_.ch{k}]", f"{t_.ref}[j * td_.ch{k}]", "sv",
                                        "static_cast<int32_t>(cw)", fa == "group"):
                self.emit("    " + line)
            self.emit("}")
            self._finish2(a, b, out)
            return out
        raise DslError(f"cannot combine {fa} and {fb}", e.loc)

    def _finish2(self, a: _V, b: _V, out: _V) -> None:
        for x in (a, b):
            if x.buf is not None and x.buf == out.buf:
                for d in x.deps:
                    self.release(d)
            else:
                self.done(x)

    # ---- Sinkhorn-Knopp
    def _sinkhorn(self, e: ir.Sinkhorn, dst: str | None) -> _V:
        a = self.ev(e.arg)
        n = e.n
        if a.buf is not None and a.ref == a.buf and not a.deps:
            m = _V("group", n * n, a.ref, "f32", a.buf)
        else:
            m = self.new_like("group", n * n, -1)
            self.emit(f"DataCopy({m.ref}, {a.ref}, static_cast<uint32_t>({n * n} * td_.rpad));")
            self.done(a)
        s = self.new_like("group", n, -1)
        R = "static_cast<int32_t>(td_.rpad)"

        def mem(t: _V, i: int) -> str:
            return f"{t.ref}[{i} * td_.rpad]"

        self.emit(f"for (int32_t iter = 0; iter < {e.iters}; ++iter) {{  // Sinkhorn-Knopp, {n} x {n} per row")
        for axis in ("row", "col"):
            for i in range(n):
                idx = [(i * n + j) if axis == "row" else (j * n + i) for j in range(n)]
                if n == 1:
                    self.emit(f"    DataCopy({mem(s, i)}, {mem(m, idx[0])}, static_cast<uint32_t>(td_.rpad));")
                else:
                    self.emit(f"    Add({mem(s, i)}, {mem(m, idx[0])}, {mem(m, idx[1])}, {R});")
                    for j in idx[2:]:
                        self.emit(f"    Add({mem(s, i)}, {mem(s, i)}, {mem(m, j)}, {R});")
            for i in range(n):
                for j in range(n):
                    cell = i * n + j
                    den = i if axis == "row" else j
                    self.emit(f"    Div({mem(m, cell)}, {mem(m, cell)}, {mem(s, den)}, {R});")
        self.emit("}")
        self.release(s.buf)
        if dst is not None:
            self.emit(f"DataCopy({dst}, {m.ref}, static_cast<uint32_t>({n * n} * td_.rpad));")
            self.release(m.buf)
            return _V("group", n * n, dst)
        return m


def _vector_kernel_class(p: ir.Program, gen: _VecGen) -> str:
    v = p.vector
    assert v is not None
    cls = f"VecKernel{camel(p.name)}"
    names = [x.name for x in p.tensors]
    gm_args = names[:len(p.inputs)] + [w.name for w in p.workspaces] + names[len(p.inputs):]
    L = [VEC_PRELUDE, "", "template <typename TilingT>", f"class {cls} {{", "public:", f"    __aicore__ inline {cls}() {{}}"]
    L.append(f"    __aicore__ inline void Init({', '.join('GM_ADDR ' + mangle('arg', n) for n in gm_args)}, "
             "const TilingT& td) {")
    L.append("        td_ = td;")
    for t in gen.vec_tensors:
        T = CTYPE[p.dtype_of(t)]
        size = f"td.splits * td.{mangle('numel', t)}" if p.is_workspace(t) else f"td.{mangle('numel', t)}"
        L.append(f"        {mangle('gm', t)}.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', t)}), "
                 f"static_cast<uint64_t>({size}));")
    for b in gen.bufs:
        if b.pos in ("VECIN", "VECOUT"):
            L.append(f"        pipe.InitBuffer({b.name}, VDEPTH, static_cast<uint32_t>(td.b_{b.name}));")
        else:
            L.append(f"        pipe.InitBuffer({b.name}, static_cast<uint32_t>(td.b_{b.name}));")
    L.append("    }")
    L.append("")
    L.append("    __aicore__ inline void Process() {")
    for name, cls_ in gen.pool_cls.items():
        if cls_[0] == "rawgroup":
            T = CTYPE[cls_[2]]
            L.append(f"        LocalTensor<{T}> {name}_raw = tb_{name}.Get<{T}>();")
        else:
            L.append(f"        LocalTensor<float> {name} = tb_{name}.Get<float>();")
    L += ["        " + x for x in gen.init_lines]
    L += gen.lines
    L.append("    }")
    L.append("")
    L.append("private:")
    L.append("    TPipe pipe;")
    for b in gen.bufs:
        if b.pos == "VECIN":
            L.append(f"    TQue<TPosition::VECIN, VDEPTH> {b.name};")
        elif b.pos == "VECOUT":
            L.append(f"    TQue<TPosition::VECOUT, VDEPTH> {b.name};")
        else:
            L.append(f"    TBuf<TPosition::VECCALC> {b.name};")
    for t in gen.vec_tensors:
        L.append(f"    GlobalTensor<{CTYPE[p.dtype_of(t)]}> {mangle('gm', t)};")
    L.append("    TilingT td_;")
    L.append("};")
    return "\n".join(L)


def _chunk_loops(v: ir.Loop) -> list[ir.InnerLoop]:
    return [s for s in v.body if isinstance(s, ir.InnerLoop)]


def _stores(body) -> list[ir.Store]:
    return [s for s in ir.walk_stmts(body) if isinstance(s, ir.Store)]


def _vec_usage(p: ir.Program) -> dict[str, bool]:
    """Tensors the vector stage touches -> whether it needs their row width (tile access)."""
    v = p.vector
    assert v is not None
    out: dict[str, bool] = {}

    def add(t: str, w: bool) -> None:
        out[t] = out.get(t, False) or w

    for e in ir.body_exprs(v.body):
        if isinstance(e, ir.Load):
            add(e.tensor, e.mode == "tile")
    for s in _stores(v.body):
        add(s.tensor, s.at != v.var)
    return out


@dataclass
class CubeLowered:
    """One lowering of a cube program for one assignment of its compile-time tunables."""

    program: ir.Program
    tiling: CubeTiling
    header: str
    cube_class: str | None
    vector_class: str | None
    depths: dict[str, int]

    kind = "cube"

    @property
    def op(self) -> str:
        return op_name(self.program.name)

    def gm_args(self) -> list[str]:
        p = self.program
        names = [x.name for x in p.tensors]
        return names[:len(p.inputs)] + [w.name for w in p.workspaces] + names[len(p.inputs):]

    def _kernel(self, which: str, cann: bool) -> str:
        p = self.program
        cls = f"{'CubeKernel' if which == 'cube' else 'VecKernel'}{camel(p.name)}"
        body = self.cube_class if which == "cube" else self.vector_class
        ktype = "KERNEL_TYPE_AIC_ONLY" if which == "cube" else "KERNEL_TYPE_AIV_ONLY"
        consts = (f"constexpr int32_t STAGES = {self.depths['stages']};  // L1 buffers per operand (2 = ping-pong)\n"
                  f"constexpr int32_t L0DEPTH = {self.depths['l0']};  // L0A/L0B buffers\n"
                  f"constexpr int32_t ACCDEPTH = {self.depths['acc']};  // L0C buffers\n") if which == "cube" else \
            f"constexpr int32_t VDEPTH = {self.depths['vec']};  // UB queue depth (2 = double buffering)\n"
        s = self.tiling.struct_name
        args = self.gm_args()
        entry = f"{self.op}_{which}"
        banner = (f"// {'Cube (AIC)' if which == 'cube' else 'Vector (AIV)'} kernel of '{p.name}', generated by "
                  "ascendcraft from its @cube_kernel program.\n"
                  "// Comments 'DSL line N' point back to the program; edit the DSL, not this file.\n")
        inc = "" if cann else f'#include "{self.op}_tiling.h"\n'
        if cann:
            load = "    GET_TILING_DATA(td, tiling);\n"
            # workspaces are carved out of the framework workspace
            ws_lines = ""
            off = "0"
            for w in p.workspaces:
                ws_lines += f"    GM_ADDR {mangle('arg', w.name)} = GetUserWorkspace(workspace) + {off};  // {w.name}\n"
                off = f"({off} + td.splits * td.Bt * td.M * td.N * 4)"
            sig = ", ".join(f"GM_ADDR {mangle('arg', n)}" for n in args if not p.is_workspace(n))
            return (f"{banner}#include \"kernel_operator.h\"\nusing namespace AscendC;\n\n{consts}\n{body}\n\n"
                    f"extern \"C\" __global__ __aicore__ void {entry}({sig}, GM_ADDR workspace, GM_ADDR tiling) {{\n"
                    f"    KERNEL_TASK_TYPE_DEFAULT({ktype});\n{load}{ws_lines}"
                    f"    {cls}<decltype(td)> op;\n    op.Init({', '.join(mangle('arg', n) for n in args)}, td);\n"
                    "    op.Process();\n}\n")
        sig = ", ".join(f"GM_ADDR {mangle('arg', n)}" for n in args)
        return (f"{banner}#include \"kernel_operator.h\"\n{inc}using namespace AscendC;\n\n{consts}\n{body}\n\n"
                f"extern \"C\" __global__ __aicore__ void {entry}({sig}, GM_ADDR workspace, GM_ADDR tiling) {{\n"
                f"    KERNEL_TASK_TYPE_DEFAULT({ktype});\n"
                f"    {s} td;\n"
                f"    const __gm__ int64_t* src = reinterpret_cast<const __gm__ int64_t*>(tiling);\n"
                f"    int64_t* dst = reinterpret_cast<int64_t*>(&td);\n"
                f"    for (uint32_t i = 0; i < sizeof({s}) / sizeof(int64_t); ++i) dst[i] = src[i];\n"
                f"    {cls}<{s}> op;\n    op.Init({', '.join(mangle('arg', n) for n in args)}, td);\n"
                "    op.Process();\n}\n")

    def kernel_source(self, which: str) -> str:
        """Kernel .cpp for direct launch and the emulator (tiling read from the GM pointer)."""
        return self._kernel(which, cann=False)

    def cann_kernel_source(self, which: str) -> str:
        """op_kernel source for a CANN project: GET_TILING_DATA, workspaces from the workspace."""
        return self._kernel(which, cann=True)

    def stages(self) -> list[str]:
        out = []
        if self.cube_class is not None:
            out.append("cube")
        if self.vector_class is not None:
            out.append("vec")
        return out

    def emulator_source(self, which: str) -> str:
        """The kernel plus the C entry points the emulator runner calls."""
        p = self.program
        s = self.tiling.struct_name
        fn = f"{camel(self.op)}ComputeTiling"
        tun = "".join(f", tunables[{i}]" for i in range(len(p.tunables)))
        sc = "".join(f", static_cast<float>(scalars[{i}])" for i in range(len(p.scalars)))
        n_gm = len(self.gm_args()) + 2
        call = ", ".join(f"(GM_ADDR)gm[{i}]" for i in range(n_gm))
        cores = "core_num, 1" if which == "cube" else "1, core_num"
        dim = "cubeDim" if which == "cube" else "vDim"
        return self.kernel_source(which) + f"""
// ---- emulator entry points (not part of the AscendC operator) ----
#include <cstring>
#include <cstdio>
extern "C" int acx_tiling(const int64_t* dims, const int32_t* ranks, int32_t n_tensors,
                          const int64_t* tunables, int32_t n_tunables, const double* scalars, int32_t n_scalars,
                          uint32_t core_num, uint8_t* out, uint32_t out_cap, uint32_t* block_dim,
                          uint64_t* workspace_bytes, char* err, int32_t errlen) {{
    if (n_tunables != {len(p.tunables)} || n_scalars != {len(p.scalars)}) {{
        std::snprintf(err, errlen, "expected {len(p.tunables)} tunables and {len(p.scalars)} scalars");
        return -1;
    }}
    {s} t{{}};
    const char* e = {fn}(dims, ranks, n_tensors, {cores}{tun}{sc}, &t);
    if (e != nullptr) {{ std::snprintf(err, errlen, "%s", e); return -1; }}
    if (sizeof(t) > out_cap) {{ std::snprintf(err, errlen, "tiling buffer too small"); return -1; }}
    std::memcpy(out, &t, sizeof(t));
    *block_dim = static_cast<uint32_t>(t.{dim});
    *workspace_bytes = 0;
    return static_cast<int>(sizeof(t));
}}

extern "C" int acx_run(void** gm, const uint64_t* gmBytes, int n_gm, const AcxRunOptions* opt, char* err, int errlen) {{
    if (n_gm != {n_gm}) {{ std::snprintf(err, errlen, "expected {n_gm} GM buffers, got %d", n_gm); return -1; }}
    return acx::Run(gm, gmBytes, n_gm, opt, err, errlen, [&] {{ {self.op}_{which}({call}); }});
}}
"""


def compile_time(p: ir.Program, params: dict[str, int] | None) -> dict[str, int]:
    """Queue depths are template arguments of TQue, fixed per build."""
    values = dict(p.defaults())
    values.update(params or {})

    def val(s: ir.Size) -> int:
        return int(values[s]) if isinstance(s, str) else int(s)

    c, v = p.cube, p.vector
    return {"stages": val(c.stages) if c else 1, "l0": val(c.l0_depth) if c else 1,
            "acc": val(c.acc_depth) if c else 1, "vec": val(v.depth) if v else 1}


@dataclass
class CubePlan:
    """Everything shape-independent: the tiling spec and the generated kernel classes."""

    checked: TypedProgram
    tiling: CubeTiling
    cube_class: str | None
    vector_class: str | None


def plan_cube(checked: TypedProgram) -> CubePlan:
    """Generate both kernels' classes and the tiling (with every on-chip buffer)."""
    check_cube_supported(checked)
    p = checked.program
    t = CubeTiling(op_name(p.name), p)
    cube_class = vector_class = None
    if p.cube is not None:
        t.formulas += _cube_formulas(p)
        t.buffers += _cube_buffers(p)
    if p.vector is not None:
        chunks = _chunk_loops(p.vector)
        t.chunk_loops = chunks
        t.vec_tensors = _vec_usage(p)
        t.formulas += _vec_formulas(p, chunks)
        gen = _VecGen(p, checked, chunks, t.vec_tensors)
        gen.run()
        if gen.scratch_need:
            expr = gen.scratch_need[0]
            for more in gen.scratch_need[1:]:
                expr = f"max({expr}, {more})"
            gen.bufs.append(Buf("tb_scratch", "VECCALC", expr))
        t.buffers += gen.bufs
        vector_class = _vector_kernel_class(p, gen)
    if p.cube is not None:
        cube_class = _cube_kernel_class(p, t)
    return CubePlan(checked, t, cube_class, vector_class)


def lower_cube(program: ir.Program | str, params: dict[str, int] | None = None,
               plan: CubePlan | None = None) -> CubeLowered:
    """Lower a cube program; only the queue depths (compile-time tunables) change the source."""
    if isinstance(program, str):
        program = parse(program)
    if plan is None:
        plan = plan_cube(check_program(program))
    return CubeLowered(program, plan.tiling, render_header(plan.tiling), plan.cube_class, plan.vector_class,
                       compile_time(program, params))


# ============================================================================ checks before build


def _fractal_checks(p: ir.Program, values: dict[str, int]) -> None:
    c = p.cube
    if c is None:
        return
    dt = p.dtype_of(c.a.tensor)
    c0 = 32 // DTYPE_BYTES[dt]
    for what, size, q in (("m", c.m, 16), ("n", c.n, 16), ("k (L0 depth, k_steps)", c.k_l0, 16),
                          ("k (L1 depth, k_stages)", c.k_l1, 16)):
        v = int(values[size]) if isinstance(size, str) else int(size)
        if v <= 0 or v % q:
            unit = f"16 x {c0} fractals of {dt}" if "k" in what else "16-row fractals"
            raise DslError(f"fractal alignment: {what} = {v} is not a positive multiple of {q} ({unit}; "
                           f"ND -> Nz pads ragged matrices, not tiles)")
    for what, size in (("order", c.order),):
        v = int(values[size]) if isinstance(size, str) else int(size)
        if v not in (0, 1, 2):
            raise DslError(f"{what} = {v}: use row_major (0), col_major (1) or swizzled (2)")


def _vector_shape_checks(p: ir.Program, t: dict[str, int], dims: list[list[int]]) -> None:
    v = p.vector
    if v is None:
        return
    names = [x.name for x in p.tensors]
    by = dict(zip(names, dims, strict=False))

    def numel(name: str) -> int:
        if p.is_workspace(name):
            return t["Bt"] * t["M"] * t["N"]
        return _numel(by[name])

    vn, vw = t["vN"], t["vW"]
    for ch in _chunk_loops(v):
        if vw % ch.parts:
            raise DslError(f"chunks(parts={ch.parts}): the row width {vw} of '{v.tensor}' is not divisible by "
                           f"{ch.parts}", ch.loc)
        pw = vw // ch.parts
        for e in ir.body_exprs(ch.body):
            if isinstance(e, ir.Load):
                n = numel(e.tensor)
                if e.mode == "tile":
                    w = n // vn
                    need = pw * ch.parts if e.part is not None else pw
                    if n != vn * need or (e.part is not None and e.part >= ch.parts):
                        raise DslError(f"load({e.tensor}, ...{', ' + str(e.part) if e.part is not None else ''}): "
                                       f"'{e.tensor}' has {w if n % vn == 0 else n / vn:g} values per row; "
                                       f"this chunks loop needs {need} (parts={ch.parts}, part width {pw})", e.loc)
                elif e.mode == "bcast" and n != pw:
                    raise DslError(f"load_bcast({e.tensor}, ...): '{e.tensor}' has {n} elements; the chunks loop "
                                   f"covers rows of width {pw}", e.loc)
        for s in _stores(ch.body):
            n = numel(s.tensor)
            need = pw * ch.parts if s.part is not None else pw
            if n != vn * need or (s.part is not None and s.part >= ch.parts):
                raise DslError(f"store({s.tensor}, ...): '{s.tensor}' has {n} elements, the chunks loop writes "
                               f"{vn} rows of {need}", s.loc)
    for e in ir.body_exprs(v.body):
        if isinstance(e, ir.Load) and e.mode in ("cols", "group", "members"):
            n = numel(e.tensor)
            want = e.size if e.mode == "members" else e.size * vn
            if n != want:
                raise DslError(f"load_{e.mode}({e.tensor}, ..., {e.size}): '{e.tensor}' has {n} elements, "
                               f"expected {want}", e.loc)
    for s in _stores(v.body):
        if s.at == v.var:
            n = numel(s.tensor)
            g = n // vn if n % vn == 0 else -1
            if g <= 0:
                raise DslError(f"store({s.tensor}, {v.var}, ...): '{s.tensor}' has {n} elements for {vn} rows",
                               s.loc)


def check_cube_budget(plan: CubePlan, dims: list[list[int]], params: dict[str, int], soc) -> dict[str, int]:
    """Evaluate the tiling for these shapes and tunables on ``soc``; raise DslError (with the
    numbers) if any buffer of L1 / L0A / L0B / L0C / UB does not fit or a tile breaks the
    fractal alignment. Runs before any build."""
    p = plan.checked.program
    values = dict(p.defaults())
    values.update(params)
    _fractal_checks(p, values)
    try:
        t = plan.tiling.evaluate(dims, values, soc.cube_cores, soc.vector_cores)
    except ValueError as e:
        raise DslError(f"shapes do not fit the kernel: {e}") from None
    _vector_shape_checks(p, t, dims)
    caps = {"L1": soc.l1_kib * 1024, "L0A": soc.l0a_kib * 1024, "L0B": soc.l0b_kib * 1024,
            "L0C": soc.l0c_kib * 1024, "UB": soc.ub_budget_kib * 1024}
    for mem, cap in caps.items():
        need = t[f"bytes{mem}"]
        if need > cap:
            parts = ", ".join(f"{b.name}={t['buf_' + b.name]} B" for b in plan.tiling.buffers if b.mem == mem)
            shown = {k: v for k, v in values.items()}
            raise DslError(f"{mem} capacity exceeded on {soc.name}: needs {need} B, {cap} B available "
                           f"({parts}; tunables {shown})")
    return t


# ============================================================================ output forms


def render_cube_outputs(lk: CubeLowered, *, soc: str = "Ascend910B2",
                        params: dict[str, int] | None = None) -> dict[str, str]:
    """Relative path -> text: the emulator build, the direct-launch form (both kernels, a host
    launcher that computes the tiling with the shared header and launches them in order) and
    the CANN ``op_kernel`` sources of each stage."""
    p = lk.program
    values = {**p.defaults(), **(params or {})}
    files: dict[str, str] = {f"emulator/{lk.op}_tiling.h": lk.header, f"direct/{lk.op}_tiling.h": lk.header,
                             f"cann/op_host/{lk.op}_tiling.h": lk.header}
    for which in lk.stages():
        files[f"emulator/{lk.op}_{which}.cpp"] = lk.emulator_source(which)
        files[f"direct/{lk.op}_{which}.cpp"] = lk.kernel_source(which)
        files[f"cann/op_kernel/{lk.op}_{which}.cpp"] = lk.cann_kernel_source(which)
    args = lk.gm_args()
    fn = f"{camel(lk.op)}ComputeTiling"
    tun = "".join(f", {values[t.name]}" for t in p.tunables)
    launches = []
    for which in lk.stages():
        dim = "t.cubeDim" if which == "cube" else "t.vDim"
        launches.append(f"    {lk.op}_{which}<<<{dim}, nullptr, stream>>>({', '.join(args)}, workspace, tilingDev);")
    ws = "".join(f"    // {w.name}: t.splits * t.Bt * t.M * t.N fp32 values of GM workspace\n" for w in p.workspaces)
    files[f"direct/{lk.op}_launch.cpp"] = (
        f"// Host side of '{p.name}' (direct launch). Build the kernels with CANN's ascendc_library for\n"
        f"// SOC_VERSION {soc}; the cube kernel runs on the AIC cores, the vector kernel on the AIV cores,\n"
        "// one after the other on the same stream (they share GM).\n"
        f'#include "{lk.op}_tiling.h"\n\n'
        f"// tunables chosen: {values}\n"
        f"// int64_t dims[...], ranks[...]: shapes of {', '.join(x.name for x in p.tensors)}\n"
        f"// {lk.tiling.struct_name} t; {fn}(dims, ranks, {len(p.tensors)}, cubeCores, vectorCores{tun}, &t);\n"
        f"// copy t to device memory tilingDev, allocate the workspace:\n{ws}"
        + "\n".join("// " + x.strip() for x in launches) + "\n")
    files["README.md"] = (
        f"# {p.name}\n\nGenerated by ascendcraft from a `@cube_kernel` program. Stages: "
        f"{', '.join(lk.stages())} (cube = AIC kernel, vec = AIV kernel; launched in that order, sharing GM).\n"
        f"Compile-time depths: {lk.depths}. Tiling: `{lk.op}_tiling.h` (`{fn}`), the same file in every form.\n")
    return files


def write_cube_outputs(lk: CubeLowered, out_dir, *, soc: str = "Ascend910B2",
                       params: dict[str, int] | None = None) -> list:
    """Write :func:`render_cube_outputs` under ``out_dir``; returns the paths written."""
    from pathlib import Path

    out = Path(out_dir)
    paths = []
    for rel, text in render_cube_outputs(lk, soc=soc, params=params).items():
        f = out / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        paths.append(f)
    return paths
