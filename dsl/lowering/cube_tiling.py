"""Host tiling of ``@cube_kernel`` programs (pass 1 of the cube lowering): one TilingData struct
and one ``<Op>ComputeTiling`` function in plain C++ (``<op>_tiling.h``) for both launches,
shared by the CANN host code and the emulator, and its Python mirror (:class:`CubeTiling`),
which evaluates the same formulas so that L1 / L0A / L0B / L0C / UB capacity, fractal
alignment and shape rules are checked, with numbers, before anything is built.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .. import ir
from ..ir import DTYPE_BYTES
from ..names import mangle, size_expr, tunable
from ..parser import DslError
from .glue import header_prologue, tiling_fn_head
from .tiling import DIM_OF, PY_HELPERS, camel

U = 16  # column alignment of vector-stage chunks (elements): 32 B of a 16-bit type
_SAFE = re.compile(r"^[A-Za-z0-9_ ,()+\-*>=<]*$")


def terms(expr: str) -> list[str]:
    """The arguments of a nest of max(...) (or the expression itself)."""
    if expr.startswith("max(") and expr.endswith(")"):
        depth, start, out = 0, 4, []
        for i, ch in enumerate(expr[4:-1], start=4):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 0:
                out += terms(expr[start:i].strip())
                start = i + 1
        return out + terms(expr[start:-1].strip())
    return [expr]


def _eval(expr: str, env: dict) -> int:
    assert _SAFE.match(expr), expr
    return int(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 - our own formulas





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
        return {"A1": "L1", "B1": "L1", "A2": "L0A", "B2": "L0B", "CO1": "L0C", "C1": "L1", "C2": "BT"}.get(self.pos, "UB")


@dataclass
class CubeTiling:
    """The host tiling: shape prologue, formulas (C++ == Python), on-chip buffers."""

    op: str
    program: ir.Program
    formulas: list[tuple[str, str]] = field(default_factory=list)
    buffers: list[Buf] = field(default_factory=list)
    chunk_loops: list[ir.InnerLoop] = field(default_factory=list)
    vec_tensors: dict[str, bool] = field(default_factory=dict)  # vector-stage tensors -> needs a row width
    # scalars of the rows stage derived on the host (constants, Scalar parameters, numel / size of
    # the kernel's tensors: an attention scale 1 / sqrt(size(q, 3))), as (field, C++ expression)
    host: list[tuple[str, str]] = field(default_factory=list)

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
        env: dict = dict(PY_HELPERS)
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
    """(batch, rows, cols, rank) of an operand as stored, following the view rules. A batched
    operand is its last two dims, batched over the product of the others (a contiguous
    [B, H, T, D] is [B*H, T, D])."""
    if batched:
        if len(d) < 3:
            raise ValueError(f"batched=True needs operands of rank >= 3; {role} '{op.tensor}' has shape {d}")
        return _numel(d[:-2]), d[-2], d[-1], len(d)
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


def cube_formulas(p: ir.Program) -> list[tuple[str, str]]:
    c = p.cube
    assert c is not None
    eb = DTYPE_BYTES[p.dtype_of(c.a.tensor)]
    cores = "coreNumCube" if c.cores is None else f"min({size_expr(c.cores)}, coreNumCube)"
    return [
        ("bm", f"max(16, min({size_expr(c.m)}, align_up(M, 16)))"),
        ("bn", f"max(16, min({size_expr(c.n)}, align_up(N, 16)))"),
        ("bk", f"max(16, {size_expr(c.k_l0)})"),
        *l1_acc_formulas(c),
        ("spl0", f"max(1, min({size_expr(c.split_k)}, ceil_div(K, bk)))"),
        # a split's K range: whole K steps; long ranges (>= 2048) in multiples of 256 elements, so
        # each split's A tiles start 512 B-aligned (fp16) in GM (modeled: 32 B-aligned moves run
        # at aligned32_factor; matmul_large_k's splits 2 and 3 started at 10944 x 2 B)
        ("kPerSplit", "align_up(ceil_div(K, spl0), sel(ceil_div(K, spl0) > 2047, max(bk, 256), bk))"),
        ("splits", "ceil_div(K, kPerSplit)"),
        ("kl1", f"min(max(bk, align_down({size_expr(c.k_l1)}, bk)), kPerSplit)"),
        ("nM", "ceil_div(M, bm)"),
        ("nN", "ceil_div(N, bn)"),
        ("blocks", "Bt * nM * nN * splits"),
        ("cubeDim", ordered_cube_dim(c, f"max(1, min({cores}, blocks))")),
        # tail split (tail=1): the last, partial wave's `remTiles` blocks are cut along N into
        # `tparts` pieces (1-4, at least 32 columns each), the count that needs the fewest
        # block-times (waves / parts, in twelfths); the other blocks run whole. tail=2 cuts them
        # along M instead (pieces of at least 32 rows): a piece then reads only its rows of A and
        # all of the block's B panel, where an N piece reads all of A - the cheaper cut when A
        # comes from HBM and B from L1 or L2 (tall and deep-narrow products)
        ("tailM", f"sel({size_expr(c.tail)} > 1, 1, 0)"),
        ("fullTiles", "floor_div(blocks, cubeDim) * cubeDim"),
        ("remTiles", "blocks - fullTiles"),
        ("maxParts", "max(1, floor_div(sel(tailM > 0, bm, bn), 32))"),
        ("tw1", "ceil_div(remTiles, cubeDim) * 12"),
        ("tw2", "sel(2 <= maxParts, ceil_div(remTiles * 2, cubeDim) * 6, 1000000)"),
        ("tw3", "sel(3 <= maxParts, ceil_div(remTiles * 3, cubeDim) * 4, 1000000)"),
        ("tw4", "sel(4 <= maxParts, ceil_div(remTiles * 4, cubeDim) * 3, 1000000)"),
        ("tbw2", "min(tw1, tw2)"),
        ("tbp2", "sel(tw2 < tw1, 2, 1)"),
        ("tbw3", "min(tbw2, tw3)"),
        ("tbp3", "sel(tw3 < tbw2, 3, tbp2)"),
        ("tparts", f"sel({size_expr(c.tail)} * remTiles > 0, sel(tw4 < tbw3, 4, tbp3), 1)"),
        ("items", "fullTiles + remTiles * tparts"),
        # run=R: each core takes R consecutive items of the order (a held A / B panel serves them all),
        # runs dealt round-robin; the items past the last whole round of runs stay round-robin
        ("runLen", f"max(1, {size_expr(c.run)})"),
        ("runFull", "floor_div(items, cubeDim * runLen) * cubeDim * runLen"),
        ("order", size_expr(c.order)),
        ("group", f"max(1, {size_expr(c.group)})"),
        ("eb", f"{eb}"),
        # a_whole=1 (A stored M x K): the block's A panel, bm x its K range, is one L1 copy kept
        # for the next block with the same rows (few-row M: every block shares it)
        # (where a layout rules it out the tunable is still read, times 0: no unused parameter)
        ("aWhole", f"0 * {size_expr(c.a_whole)}" if c.a.transpose else f"sel({size_expr(c.a_whole)} > 0, 1, 0)"),
        # b_whole=1: the same for B (not fp32 B stored K x N, which L1 holds as 16-row strips)
        ("bWhole", f"0 * {size_expr(c.b_whole)}" if not c.b.transpose and eb == 4
         else f"sel({size_expr(c.b_whole)} > 0, 1, 0)"),
        # b_ahead=E (with b_whole): the held panel as one L1 piece per K stage (``bPieces``) in a ring of
        # ``bwSlots`` buffers, E of them taking the core's next panel while the current run computes
        ("bAhead", f"sel(bWhole > 0, max(0, {size_expr(c.b_ahead)}), 0)"),
        ("bPieces", "ceil_div(kPerSplit, kl1)"),
        ("bwSlots", "sel(bAhead > 0, bPieces + bAhead, 1)"),
        # b_hold=H (with b_whole, not b_ahead): the held panel is only H x 64 rows of the K range (whole K
        # steps, ``bHold``); each other K step streams its bk rows of B GM -> L1 through the stage ring
        # (``bStream``): a panel too deep for L1 beside the A stages keeps most of it resident and reads
        # the rest again per block (from L2), not the whole panel
        ("bHold", f"sel(bWhole > 0, sel(bAhead > 0, kPerSplit, sel({size_expr(c.b_hold)} > 0, "
         f"min(kPerSplit, max(bk, align_down({size_expr(c.b_hold)} * 64, bk))), kPerSplit)), kPerSplit)"),
        ("bStream", "sel(bHold < kPerSplit, 1, 0)"),
        # stored rows of a next-panel piece loaded per K stage: an eighth of the piece (its K rows; N rows
        # for B stored N x K), each row a whole contiguous run of the piece
        ("bChunk", "align_up(ceil_div(bn, 8), 16)" if c.b.transpose else "align_up(ceil_div(kl1, 8), 16)"),
        # fix_split=1: the first and last K stages of a block run per column half (the Fixpipe of one
        # half overlaps the Mmads of the other); 2: every K stage per row half (each Fixpipe writes whole
        # block rows: no half-width GM bursts; fp32 A stored K x M, loaded to L0A by transposed
        # squares of all the block's rows, keeps 1); with two L0C buffers (acc_depth 2) it is off
        ("fixSplit", f"sel({size_expr(c.fix_split)} > 0, sel({size_expr(c.acc_depth)} > 1, 0, "
         + ("1" if c.a.transpose and eb == 4 else f"sel({size_expr(c.fix_split)} > 1, 2, 1)") + "), 0)"),
        # fix_defer=d (with acc_depth 2, not ordered_split): a block's Fixpipe is issued after the next
        # block's d-th K stage. The model books the HBM channel in program order: a Fixpipe issued at
        # its block's end takes the channel first and stretches the A copy running beside it; issued
        # after the next block's first copies it fills the gaps those leave (L2-served copies that
        # their path, not the channel, bounds) and only then delays the later ones
        ("fixDefer", f"0 * {size_expr(c.fix_defer)}" if c.ordered_split else
         f"sel({size_expr(c.acc_depth)} > 1, max(0, {size_expr(c.fix_defer)}), 0)"),
    ] + ordered_split_formulas(c)


def l1_acc_formulas(c: ir.CubeStage) -> list[tuple[str, str]]:
    """tile_m= / tile_n=: the block is computed as L0C tiles of tm x tn (multiples of 16, at most the
    block); a block of more tiles than L0C buffers keeps their fp32 partial sums in L1 between K
    stages (``l1Acc``). Off (no tile sizes): no fields."""
    if not c.l1_acc:
        return []
    return [("tm", f"sel({size_expr(c.tile_m)} > 0, max(16, min(bm, align_down({size_expr(c.tile_m)}, 16))), bm)"),
            ("tn", f"sel({size_expr(c.tile_n)} > 0, max(16, min(bn, align_down({size_expr(c.tile_n)}, 16))), bn)"),
            ("l1Acc", "sel(tm < bm, 1, sel(tn < bn, 1, 0))")]


def ordered_cube_dim(c: ir.CubeStage, plain: str) -> str:
    """ordered_split: cube cores in a multiple of the split count, so a round of ``cubeDim`` work
    items (a block's splits are consecutive items) holds whole blocks, whose sums are complete at
    the round's last barrier."""
    return f"max(splits, floor_div({plain}, splits) * splits)" if c.ordered_split else plain


def ordered_split_formulas(c: ir.CubeStage) -> list[tuple[str, str]]:
    """ordered_split: every core runs the same number of rounds of ``cubeDim`` work items
    (``itemsPad``), so each reaches the same number of SyncAll barriers (an idle slot of the
    last round still joins its barrier); ``n16All``: the row pitch of the workspace's block
    images (each block mB rows x its columns padded to 16, Nz); one fp32 slice per split."""
    return [("itemsPad", "ceil_div(items, cubeDim) * cubeDim"), ("n16All", "align_up(N, 16)"),
            ("wsSlice", "Bt * M * n16All"), ("wsFloats", "splits * wsSlice")] if c.ordered_split else []



def vec_formulas(p: ir.Program, chunks: list[ir.InnerLoop]) -> list[tuple[str, str]]:
    v = p.vector
    assert v is not None
    cores = "coreNumVec" if v.cores is None else f"min({size_expr(v.cores)}, coreNumVec)"
    out = [
        ("vDim", f"max(1, min({cores}, vN))"),
        ("baseRows", "floor_div(vN, vDim)"),
        ("bigCores", "vN - baseRows * vDim"),
        ("tileRows", f"max(1, min({size_expr(v.tile)}, baseRows + sel(bigCores > 0, 1, 0)))"),
        ("rowElems", "align_up(tileRows, 64)"),
    ]
    if p.cube is None:
        out.append(("splits", "1"))
    for i, ch in enumerate(chunks):
        # a loop that reads a 1-byte tensor (a bool mask) as tiles: 32-element chunks, so each row of a
        # multi-row tile starts 32 B-aligned in UB (16 elements of 1 byte would not)
        u = 2 * U if any(isinstance(e, (ir.Load, ir.LoadRowsBcast)) and DTYPE_BYTES[p.dtype_of(e.tensor)] == 1
                         for e in ir.body_exprs(ch.body)) else U
        out += [
            (f"pw{i}", f"floor_div(vW, {ch.parts})"),
            (f"ch{i}", f"max({u}, min(align_down({size_expr(ch.size)}, {u}), align_up(pw{i}, {u})))"),
        ]
    chmax = str(U)
    for i in range(len(chunks)):
        chmax = f"max({chmax}, ch{i})"
    # the vector compute pass's buffer sizes: tiles of the widest chunk, its reduction work space
    out += [("chmax", chmax), ("tileElems", "tileRows * chmax"), ("colElems", "chmax"),
            ("workElems", "align_up(ceil_div(chmax, 8), 64)")]
    return out


def render_header(t: CubeTiling) -> str:
    """The plain C++ tiling header shared by the CANN host code and both kernels."""
    p = t.program
    fn = f"{camel(t.op)}ComputeTiling"
    s = t.struct_name
    names = [x.name for x in p.tensors]
    L = header_prologue(f"cube kernel '{t.op}'", "acx_cube_tiling", DIM_OF if t.host else [], s, t.fields(),
                        [*((mangle("sc", sc.name), "") for sc in p.scalars),
                         *((name, "derived on the host") for name, _ in t.host)])
    L += tiling_fn_head(["// dims/ranks: shapes of the kernel's tensors (inputs then outputs, workspaces excluded).",
                         "// Returns nullptr or an error message (static string)."], fn,
                        "int64_t coreNumCube, int64_t coreNumVec", (tunable(x.name) for x in p.tunables),
                        (mangle("sc", x.name) for x in p.scalars), s, "acx_cube_tiling")
    L += [
        f"    if (nTensors != {len(names)}) return \"expected {len(names)} tensor shapes\";",
        f"    const int64_t* d[{len(names)}];",
        f"    int64_t numel[{len(names)}];",
        "    { int64_t off = 0;",
        f"      for (int32_t i = 0; i < {len(names)}; ++i) {{ d[i] = dims + off; numel[i] = 1;",
        "        for (int32_t j = 0; j < ranks[i]; ++j) { numel[i] *= d[i][j]; }",
        "        off += ranks[i]; } }",
    ]
    c = p.cube
    if c is not None:
        def view(op: ir.Operand, var: str) -> list[str]:
            i = names.index(op.tensor)
            if c.batched:  # the last two dims, batched over the product of the others
                return [f"    if (ranks[{i}] < 3) return \"batched=True needs operands of rank >= 3\";",
                        f"    int64_t {var}b = 1;",
                        f"    for (int32_t j = 0; j + 2 < ranks[{i}]; ++j) {{ {var}b *= d[{i}][j]; }}",
                        f"    const int64_t {var}r = d[{i}][ranks[{i}] - 2], {var}c = d[{i}][ranks[{i}] - 1];"]
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
    if t.host:  # each tensor's index and element count, the names host_expr reads
        for i, name in enumerate(names):
            L += [f"    const int32_t {mangle('ti', name)} = {i};", f"    (void){mangle('ti', name)};",
                  f"    const double {mangle('nel', name)} = static_cast<double>(numel[{i}]);",
                  f"    (void){mangle('nel', name)};"]
        L.append("    // scalars of the rows stage derived once on the host")
        for name, expr in t.host:
            L.append(f"    t->{name} = static_cast<float>({expr});")
    L += ["    return nullptr;", "}", ""]
    return "\n".join(L)


def chunk_loops(v: ir.Loop) -> list[ir.InnerLoop]:
    """The column-chunk loops of a rows stage, in order (chunks loop k: tiling fields pw<k>, ch<k>)."""
    return [s for s in v.body if isinstance(s, ir.InnerLoop)]


def stores(body) -> list[ir.Store]:
    return [s for s in ir.walk_stmts(body) if isinstance(s, ir.Store)]


def vec_usage(p: ir.Program) -> dict[str, bool]:
    """Tensors the vector stage touches -> whether it needs their row width (tile access)."""
    v = p.vector
    assert v is not None
    out: dict[str, bool] = {}

    def add(t: str, w: bool) -> None:
        out[t] = out.get(t, False) or w

    for e in ir.body_exprs(v.body):
        if isinstance(e, ir.Load):
            add(e.tensor, e.mode == "tile")
        elif isinstance(e, ir.LoadRowsBcast):  # whole rows of the loop's width, copied per row
            add(e.tensor, False)
    for s in stores(v.body):
        add(s.tensor, s.at != v.var)
    return out


def fractal_checks(p: ir.Program, values: dict[str, int]) -> None:
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


def vector_shape_checks(p: ir.Program, t: dict[str, int], dims: list[list[int]]) -> None:
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
    for ch in chunk_loops(v):
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
        for s in stores(ch.body):
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
    for s in stores(v.body):
        if s.at == v.var:
            n = numel(s.tensor)
            g = n // vn if n % vn == 0 else -1
            if g <= 0:
                raise DslError(f"store({s.tensor}, {v.var}, ...): '{s.tensor}' has {n} elements for {vn} rows",
                               s.loc)
