"""Pass 1 — host tiling: the per-core split, tile sizes and tails, as plain C++.

The formulas are written once, below, in a tiny expression language that is valid C++
(with the helpers ``ceil_div``/``align_up``/... defined in the generated header) and is
also evaluated in Python by the checker, so the UB budget of an assignment is known before
anything is built. The generated C++ (``<op>_tiling.h``) is the source of truth at run
time: the CANN host ``TilingFunc`` and the emulator both call it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .. import ir, ops
from ..names import mangle, size_expr, tunable
from .glue import header_prologue, tiling_fn_head

# Quantities derived from the shapes before the formulas run (computed by a fixed prologue).
ROW_BLOCKS_CHUNKS = 4
"""Row values hoisted before a chunks loop go to 32 B blocks (Brcb, two-input ops at 2 cycles a
repeat) when a row has at most this many chunks, else to scalars read once a rows tile (one V->S
sync, Adds/Muls at 1 cycle a repeat): the sync is worth more than the extra cycles only while few
chunks share it (modeled: layer_norm 4096x8192, 2 chunks, 5% faster with blocks; softmax,
group/batch norm and layer_norm_2d at 16 chunks 1-3% faster with scalars)."""

FLAT_ROWS, FLAT_TABLE = "flatRows", 4096
"""Flat loads (compute_flat.py) gather flatRows rows a Gather call over one byte-offset table of
flatRows rows: at most FLAT_TABLE entries (16 KiB) for narrow rows, one row for rows wider."""

SHAPE_VARS = {
    "tiles": ("n",),
    "rows": ("A", "N", "W"),
    "slabs": ("A", "K", "B"),
    "windows": ("P", "ID", "IH", "IW"),
}


def window_params(loop: ir.Loop) -> dict[str, tuple[int, int, int]]:
    """(kernel, stride, padding) per spatial dim D, H, W; dims not pooled get (1, 1, 0)."""
    out = {}
    for i, name in enumerate(("D", "H", "W")):
        j = i - (3 - loop.dim)  # the pooled dim, if any
        out[name] = window_of_dim(loop.window, j) if j >= 0 else (1, 1, 0)
    return out


def window_dilation(loop: ir.Loop) -> dict[str, int]:
    """The distance between taps per spatial dim D, H, W (1 for dims not pooled)."""
    d = loop.dilation
    return {name: (d if isinstance(d, int) else d[i - (3 - loop.dim)]) if 3 - i <= loop.dim else 1
            for i, name in enumerate(("D", "H", "W"))}


def window_extents(loop: ir.Loop) -> dict[str, tuple[int, int, int]]:
    """window_params with each kernel replaced by its dilated extent (d (k - 1) + 1): what the
    output size and the staged segment follow."""
    dil = window_dilation(loop)
    return {n: ((k - 1) * dil[n] + 1, s, p) for n, (k, s, p) in window_params(loop).items()}


def window_of_dim(window: tuple, j: int) -> tuple[int, int, int]:
    """(kernel, stride, padding) of pooled dim ``j`` of an ir.Loop.window (ints shared by
    every pooled dim, or tuples per pooled dim)."""
    return tuple(v if isinstance(v, int) else v[j] for v in window)  # type: ignore[return-value]


def pooled_extent(i: str, k: int, s: int, p: int, ceil: bool, div: str = "floor_div") -> str:
    """The output extent of a pooled input extent ``i`` (an expression): PyTorch's formula,
    ``(i + 2p - k) / s + 1`` rounded down, or with ``ceil`` rounded up, then one less when
    the last window would start past the input and its left padding ((o - 1) s >= i + p).
    ``div``: the integer division's spelling (``floor_div`` in the formula language, ``/``
    in plain C++ of non-negative operands)."""
    if not ceil:
        q = f"floor_div({i} + {2 * p - k}, {s})" if div == "floor_div" else f"({i} + {2 * p - k}) / {s}"
        return f"{q} + 1"
    q = f"floor_div({i} + {2 * p - k + s - 1}, {s})" if div == "floor_div" else f"(({i} + {2 * p - k + s - 1}) / {s})"
    if div == "floor_div":
        return f"{q} + 1 - sel({q} * {s} + 1 > {i} + {p}, 1, 0)"
    return f"{q} + 1 - ({q} * {s} >= {i} + {p} ? 1 : 0)"


def pooled_size(i: int, k: int, s: int, p: int, ceil: bool) -> int:
    """Python mirror of :func:`pooled_extent`."""
    if not ceil:
        return (i + 2 * p - k) // s + 1
    q = (i + 2 * p - k + s - 1) // s
    return q + 1 - (1 if q * s >= i + p else 0)


def formulas(loop: ir.Loop, chunked: bool, loops: list[ir.Loop] | None = None) -> list[tuple[str, str]]:
    """(field, expression) pairs, evaluated in order; every field lands in the tiling struct."""
    tile = size_expr(loop.tile)
    cores = "coreNum" if loop.cores is None else f"min({size_expr(loop.cores)}, coreNum)"
    if loop.kind == "tiles":
        # cores split the tensor in granules of 16 units (512 B of the narrowest dtype), so
        # every core's part starts 512 B aligned in GM (full bandwidth; 32 B-aligned ~70%)
        return [
            ("units", "ceil_div(n, 16 * U)"),
            ("blockDim", f"max(1, min({cores}, units))"),
            ("baseUnits", "floor_div(units, blockDim)"),
            ("bigCores", "units - baseUnits * blockDim"),
            ("tileLen", f"max(U, min(align_down({tile}, U), (baseUnits + sel(bigCores > 0, 1, 0)) * 16 * U))"),
            ("tileElems", "tileLen"),
            ("rowElems", "0"),
            ("colElems", "0"),
            ("workElems", "align_up(ceil_div(tileElems, 8), 64)"),
        ]
    if loop.kind == "windows":
        wp = window_extents(loop)
        out = []
        for n in ("D", "H", "W"):
            k, st, pd = wp[n]
            out.append((f"O{n}", pooled_extent(f"I{n}", k, st, pd, loop.ceil and k > 1)))
        # cores split the (plane, od, row tile) units; a tile is R consecutive oh rows of one
        # (plane, od), so the input rows one window offset needs are SH * IW apart: one strided
        # copy a tile. Row tiles, not whole planes, so 1024 planes of 32 tiles on 48 cores
        # are 683 tiles a core at most, not 22 planes (3% over the mean)
        out += [
            ("NR", "P * OD * OH"),
            ("tileRows", f"max(1, min({tile}, OH))"),
            ("rowTiles", "ceil_div(OH, tileRows)"),
            ("units", "P * OD * rowTiles"),
            ("blockDim", f"max(1, min({cores}, units))"),
            ("baseUnits", "floor_div(units, blockDim)"),
            ("bigCores", "units - baseUnits * blockDim"),
            ("chunk", f"max(U, min(align_down({size_expr(loop.chunk)}, U), align_up(OW, U)))"),
            ("chunkPad", "chunk"),
            ("segLen", f"(chunk - 1) * {wp['W'][1]} + {wp['W'][0]}"),
            # 1-D: room for the columns below a segment's 512 B-aligned start (compute._seg_start)
            ("stW", "align_up(segLen + 16 * U, U) + U" if loop.dim == 1 else "align_up(segLen, U) + U"),
            # reuse: the (tileRows - 1) * SH + KH input rows of a tile, staged once per kd
            ("stageElems", f"((tileRows - 1) * {wp['H'][1]} + {wp['H'][0]}) * stW" if loop.reuse
             else "tileRows * stW"),
            ("tileElems", "tileRows * chunkPad"),
            ("rowElems", "align_up(tileRows, 64)"),
            ("colElems", "chunkPad"),
            ("workElems", "align_up(ceil_div(chunkPad, 8), 64)"),
        ]
        return out
    if loop.kind == "rows":
        chunk = None
        for s in loop.body:
            if isinstance(s, ir.InnerLoop) and s.kind == "chunks":
                chunk = size_expr(s.size)
        for other in loops or ():
            for s in other.body:
                if isinstance(s, ir.InnerLoop) and s.kind == "chunks":
                    chunk = chunk or size_expr(s.size)
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
        holds = [s.hold for s in loop.body if isinstance(s, ir.InnerLoop) and s.kind == "chunks" and s.hold is not None]
        out += [
            ("chunkPad", "align_up(chunk, U)"),
            ("tileElems", "tileRows * chunkPad"),
            # chunks(t, S, hold=H): the first H chunks of a row tile stay in UB for the later passes
            *([("holdChunks", f"max(0, min({size_expr(holds[0])}, ceil_div(W, chunk)))")] if holds else []),
            ("rowElems", "align_up(tileRows, 64)"),
            ("colElems", "chunkPad"),
            ("workElems", "align_up(ceil_div(max(chunkPad, rowElems), 8), 64)"),
            ("rowBlocks", f"sel(ceil_div(W, chunk) > {ROW_BLOCKS_CHUNKS}, 0, 1)"),
        ]
        if loop.flat:  # one burst of the tile's rows: up to 512 B below its start, 32 B past its end
            out += [("flatElems", "tileRows * W + 18 * U"), (FLAT_ROWS, f"max(1, min(tileRows, floor_div({FLAT_TABLE}, chunkPad)))")]
        return out
    # slabs(flat=True): a tile is all of B, so kb steps are one contiguous run of GM
    tile_len = "align_up(B, U)" if loop.flat else f"max(U, min(align_down({tile}, U), align_up(B, U)))"
    if loop.hold:  # tile= is the held block's elements: every step of K times the positions, in
        # whole 512 B (16 U) when a step has that many (full-bandwidth bursts), else in 32 B
        per = f"floor_div({tile}, max(1, K))"
        tile_len = (f"max(U, min(sel({per} > 16 * U - 1, align_down({per}, 16 * U), align_down({per}, U)), "
                    "align_up(B, U)))")
    # split=S: an item is one slice of K of one tile (lowering/split_k.py); after the SyncAll the
    # outItems tiles are shared out again for the combine. At most coreNum slices (more never
    # adds a busy core), so the workspace is at most coreNum partial rows an output row each
    split = [("splits", f"max(1, min(min({size_expr(loop.split)}, K), coreNum))")] if loop.split is not None else []
    return [
        ("tileLen", tile_len),
        ("blocksPerOuter", "ceil_div(B, tileLen)"),
        *split,
        ("items", "A * blocksPerOuter * splits" if split else "A * blocksPerOuter"),
        ("blockDim", f"max(1, min({cores}, items))"),
        ("baseItems", "floor_div(items, blockDim)"),
        ("bigCores", "items - baseItems * blockDim"),
    ] + ([("outItems", "A * blocksPerOuter"), ("baseOut", "floor_div(outItems, blockDim)"),
          ("bigOut", "outItems - baseOut * blockDim")] if split else []) + ([("stepRows", "max(1, K)" if loop.hold else f"max(1, min({size_expr(loop.step_rows)}, K))"), ("tileElems", "tileLen" if loop.block_max else "stepRows * tileLen")]
         if loop.step_rows is not None else [("tileElems", "tileLen")]) + (
        [("flatElems", "stepRows * B + 18 * U"), (FLAT_ROWS, f"max(1, min(stepRows, floor_div({FLAT_TABLE}, tileLen)))")]
        if loop.flat else []) + [
        # a blocked steps loop's load_step values: one per step row (lowering: _block_steps)
        ("rowElems", "align_up(stepRows, 64)" if loop.step_rows is not None else "0"),
        ("colElems", "0"),
        ("workElems", "align_up(ceil_div(tileElems, 8), 64)"),
    ]


PY_HELPERS = {  # the formula language's helpers, in Python (the header defines them in C++)
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
    host: tuple[tuple[str, str], ...] = ()  # derived float fields: (name, C++ expression)
    tensors: tuple[str, ...] = ()  # tensor names in argument order (numel(x) in host expressions)
    grid_loops: int = 0  # loops combining total_* values: GM workspace of 32 B per core each
    split_accs: int = 0  # slabs(split=S): accumulators written per item (one tileLen fp32 row each)
    groups: int = 1  # rows: each trailing-dims row split into this many rows
    axis: int = -1  # rows(axis=a): strided rows (A segments of W elements each)
    #: column windows (load_slice): (col field, pitch field, tensor index, col C++, col expression)
    slices: tuple[tuple[str, str, int, str, ir.Expr], ...] = ()
    #: row windows (load_rows_bcast(x, t, d, n, p, o, m, q)): (their fields, tensor index, their
    #: C++ expressions, their expressions)
    row_windows: tuple[tuple[tuple[str, ...], int, tuple[str, ...], tuple[ir.Expr, ...]], ...] = ()

    def slice_fields(self) -> list[str]:
        """The int64 fields of the windows: each column window's column, each tensor's pitch;
        each row window's n, p, o, m, q."""
        out: list[str] = []
        for col, pitch, *_ in self.slices:
            out += [f for f in (col, pitch) if f not in out]
        for names, *_ in self.row_windows:
            out += [f for f in names if f not in out]
        return out

    @property
    def struct_name(self) -> str:
        return f"{camel(self.op)}TilingData"

    def fields(self) -> list[str]:
        return (list(SHAPE_VARS[self.kind]) + ["coreNum"] + [f for f, _ in self.all_formulas()]
                + ["ubBytes", "workspaceBytes"] + self.slice_fields())

    def all_formulas(self) -> tuple[tuple[str, str], ...]:
        """The split formulas followed by one byte size per UB buffer."""
        return self.formulas + tuple((f, e) for f, _, e in self.buffers)

    def workspace_expr(self) -> str:
        grid = f"{self.grid_loops} * blockDim * 32"
        return f"{grid} + {self.split_accs} * items * tileLen * 4" if self.split_accs else grid

    def ub_expr(self) -> str:
        terms = [f"{slots} * {f}" for f, slots, _ in self.buffers]
        return " + ".join(terms) if terms else "0"

    def evaluate(self, dims: list[list[int]], tunables: dict[str, int], core_num: int) -> dict[str, int]:
        """The Python evaluation of the same formulas the C++ header computes."""
        env: dict[str, int] = dict(PY_HELPERS)
        env.update({"U": self.unit, "coreNum": core_num})
        env.update({tunable(k): v for k, v in tunables.items()})
        env.update(shape_vars(self.kind, dims[self.ref_index], self.dim, self.groups, self.axis))
        out = {k: env[k] for k in SHAPE_VARS[self.kind]}
        out["coreNum"] = core_num
        for name, expr in self.all_formulas() + (("ubBytes", self.ub_expr()),
                                                  ("workspaceBytes", self.workspace_expr())):
            assert _SAFE_EXPR.match(expr), expr
            env[name] = int(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 - our own formulas
            out[name] = env[name]
        out.update(self.evaluate_slices(dims, out))
        out.update(self.evaluate_row_windows(dims, out))
        return out

    def evaluate_slices(self, dims: list[list[int]], t: dict[str, int]) -> dict[str, int]:
        """Python mirror of the header's column-window checks (raises ValueError naming the
        window: a column that is not a whole number, a window outside the tensor's rows)."""
        out: dict[str, int] = {}
        if not self.slices:
            return out
        rows, width = (1, t["n"]) if self.kind == "tiles" else (t["N"], t["W"])
        for col_f, pitch_f, ti, _, e in self.slices:
            name = self.tensors[ti]
            nel = math.prod(dims[ti]) if ti < len(dims) else 0
            if nel % rows:
                raise ValueError(f"load_slice({name}, t, col): '{name}' has {nel} elements, not a whole number "
                                 f"of the loop's {rows} rows")
            pitch = nel // rows
            col = host_value(e, dims, self.tensors)
            if col != int(col) or not math.isfinite(col):
                raise ValueError(f"load_slice({name}, t, col): col = {col:g} is not a whole number of elements")
            if col < 0 or int(col) + width > pitch:
                raise ValueError(f"load_slice({name}, t, col): columns [{int(col)}, {int(col) + width}) are outside "
                                 f"'{name}'s rows of {pitch} elements")
            out[col_f], out[pitch_f] = int(col), pitch
        return out

    def evaluate_row_windows(self, dims: list[list[int]], t: dict[str, int]) -> dict[str, int]:
        """Python mirror of the header's row-window checks (raises ValueError naming the window:
        a value that is not a whole number, rows outside the tensor)."""
        out: dict[str, int] = {}
        for names, ti, _, exprs in self.row_windows:
            name = self.tensors[ti]
            what = f"load_rows_bcast({name}, t, d, n, p, o, m, q)"
            nel = math.prod(dims[ti]) if ti < len(dims) else 0
            vals = []
            for letter, e in zip("npomq", exprs, strict=True):
                v = host_value(e, dims, self.tensors)
                if not math.isfinite(v) or v != int(v):
                    raise ValueError(f"{what}: {letter} = {v:g} is not a whole number")
                vals.append(int(v))
            n, p, o, m, q = vals
            if min(n, p, m, q) < 1 or o < 0:
                raise ValueError(f"{what}: n = {n}, p = {p}, o = {o}, m = {m}, q = {q}: o must be at least 0, "
                                 "the others at least 1")
            if o + window_reach(n, p, m, q) + t["W"] > nel:
                raise ValueError(f"{what}: {n} rows of {t['W']} elements from element {o} run past the {nel} "
                                 f"elements of '{name}'")
            out.update(zip(names, vals, strict=True))
        return out


def window_reach(n: int, p: int, m: int, q: int) -> int:
    """The largest start offset of a row window's rows (row j at (j // m) q + (j % m) p, j < n):
    the last row, or the last row of the block before it."""
    last = n - 1
    far = (last // m) * q + (last % m) * p
    if last >= m:
        far = max(far, (last // m - 1) * q + (m - 1) * p)
    return far


def shape_vars(kind: str, dims: list[int], dim: int, groups: int = 1, axis: int = -1) -> dict[str, int]:
    """Python mirror of the header's prologue (kept trivially small on purpose)."""
    numel = 1
    for d in dims:
        numel *= d
    if kind == "tiles":
        if numel == 0:
            raise ValueError("empty tensor")
        return {"n": numel}
    if kind == "windows":
        if len(dims) < dim + 1:
            raise ValueError(f"windows(dims={dim}) needs a tensor of rank >= {dim + 1}, got rank {len(dims)}")
        sp = [1] * (3 - dim) + list(dims[len(dims) - dim:])
        if numel == 0:
            raise ValueError("empty tensor")
        return {"P": numel // (sp[0] * sp[1] * sp[2]), "ID": sp[0], "IH": sp[1], "IW": sp[2]}
    if kind == "rows" and axis >= 0:
        if axis >= len(dims):
            raise ValueError(f"rows(axis={axis}) needs a tensor of rank > {axis}, got rank {len(dims)}")
        a = 1
        for d in dims[:axis]:
            a *= d
        w = 1
        for d in dims[axis + 1:]:
            w *= d
        if numel == 0:
            raise ValueError("empty tensor")
        return {"A": a, "N": dims[axis], "W": w}
    if kind == "rows":
        if dim > len(dims):
            raise ValueError(f"rows(dims={dim}) needs a tensor of rank >= {dim}, got rank {len(dims)}")
        w = 1
        for d in dims[len(dims) - dim:]:
            w *= d
        if w == 0 or numel == 0:
            raise ValueError("empty tensor")
        if w % groups:
            raise ValueError(f"rows(groups={groups}): a row of {w} elements does not split evenly")
        return {"A": 1, "W": w // groups, "N": numel // w * groups}
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


DIM_OF = [
    "// extent of dim i (negative: from the end) of tensor ti; 0 if out of range",
    "inline double dim_of(const int64_t* dims, const int32_t* ranks, int32_t ti, int32_t i) {",
    "    int64_t o = 0;",
    "    for (int32_t k = 0; k < ti; ++k) o += ranks[k];",
    "    const int32_t j = i < 0 ? ranks[ti] + i : i;",
    "    return (j < 0 || j >= ranks[ti]) ? 0.0 : static_cast<double>(dims[o + j]);",
    "}",
]


def render_header(spec: TilingSpec) -> str:
    """The plain C++ tiling header shared by the CANN host code and the emulator."""
    s = spec.struct_name
    fn = f"{camel(spec.op)}ComputeTiling"
    lines = header_prologue(f"'{spec.op}'", "acx_tiling_util", DIM_OF, s, spec.fields(),
                            [*((mangle("sc", x), "") for x in spec.scalars),
                             *((name, "derived on the host") for name, _ in spec.host)])
    lines += tiling_fn_head(["// dims/ranks: the shapes of the kernel's tensors (inputs then outputs); returns 0 or an",
                             "// error message (static string) for shapes the kernel cannot handle."], fn,
                            "int64_t coreNum", (tunable(t) for t in spec.tunables),
                            (mangle("sc", x) for x in spec.scalars), s, "acx_tiling_util")
    lines += [
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
    elif spec.kind == "windows":
        lines += [
            f"    if (rank < {spec.dim} + 1) return \"windows(): tensor rank is below dims + 1\";",
            f"    const int64_t ID = {spec.dim} >= 3 ? d[rank - 3] : 1;",
            f"    const int64_t IH = {spec.dim} >= 2 ? d[rank - 2] : 1;",
            "    const int64_t IW = d[rank - 1];",
            "    const int64_t P = numel / (ID * IH * IW);",
        ]
    elif spec.kind == "rows" and spec.axis >= 0:
        lines += [
            f"    if (rank <= {spec.axis}) return \"rows(axis=...): tensor rank is not above axis\";",
            "    int64_t A = 1, W = 1;",
            f"    for (int32_t i = 0; i < {spec.axis}; ++i) A *= d[i];",
            f"    for (int32_t i = {spec.axis} + 1; i < rank; ++i) W *= d[i];",
            f"    const int64_t N = d[{spec.axis}];",
        ]
    elif spec.kind == "rows":
        lines += [
            "    const int64_t A = 1;",
            f"    if (rank < {spec.dim}) return \"rows(): tensor rank is smaller than dims\";",
            "    int64_t W = 1;",
            f"    for (int32_t i = rank - {spec.dim}; i < rank; ++i) W *= d[i];",
            f"    if (W % {spec.groups} != 0) return \"rows(groups=...): a row does not split evenly\";",
            f"    W /= {spec.groups};",
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
    lines.append(f"    t->workspaceBytes = {spec.workspace_expr()};")
    for sc in spec.scalars:
        lines.append(f"    t->{mangle('sc', sc)} = {mangle('sc', sc)};")
    if spec.host or spec.slices or spec.row_windows:
        lines += _tensor_size_lines(spec)
    if spec.host:
        lines.append("    // scalars derived once on the host from Scalar parameters, constants and numel")
        for name, expr in spec.host:
            lines.append(f"    const double {name} = {expr};")
            lines.append(f"    t->{name} = static_cast<float>({name});")
    lines += _slice_lines(spec)
    lines += _row_window_lines(spec)
    lines += ["    return nullptr;", "}", ""]
    return "\n".join(lines)


def _tensor_size_lines(spec: TilingSpec) -> list[str]:
    """Each tensor's index and element count, the names host scalars and load_slice columns
    use (``host_expr``: ``numel(x)`` and ``size(x, d)``)."""
    lines: list[str] = []
    for i, name in enumerate(spec.tensors):
        ti, nel = mangle("ti", name), mangle("nel", name)
        lines += [f"    const int32_t {ti} = {i};", f"    (void){ti};", f"    double {nel} = 1.0;",
                  f"    {{ int64_t o = 0; for (int32_t k = 0; k < {i}; ++k) o += ranks[k];",
                  f"      for (int32_t k = 0; k < ranks[{i}]; ++k) {nel} *= static_cast<double>(dims[o + k]); }}",
                  f"    (void){nel};"]
    return lines


def _slice_lines(spec: TilingSpec) -> list[str]:
    """The header's column windows: each tensor's row pitch (numel / the loop's rows) and each
    window's column, exact int64, checked like :meth:`TilingSpec.evaluate_slices`."""
    if not spec.slices:
        return []
    rows, width = ("1", "n") if spec.kind == "tiles" else ("N", "W")
    lines = ["    // column windows (load_slice): row pitch and first column, checked against the shapes"]
    done: set[str] = set()
    for col_f, pitch_f, ti, cpp, _ in spec.slices:
        if pitch_f not in done:
            done.add(pitch_f)
            lines += [f"    int64_t {pitch_f} = 1;",
                      f"    {{ int64_t o = 0; for (int32_t k = 0; k < {ti}; ++k) o += ranks[k];",
                      f"      for (int32_t k = 0; k < ranks[{ti}]; ++k) {pitch_f} *= dims[o + k]; }}",
                      f"    if ({pitch_f} % {rows} != 0) return \"load_slice(): the tensor is not a whole number of the loop's rows\";",
                      f"    {pitch_f} /= {rows};",
                      f"    t->{pitch_f} = {pitch_f};"]
        lines += [f"    const double {col_f}d = {cpp};",
                  f"    const int64_t {col_f} = static_cast<int64_t>({col_f}d);",
                  f"    if (static_cast<double>({col_f}) != {col_f}d) return \"load_slice(): col is not a whole number\";",
                  f"    if ({col_f} < 0 || {col_f} + {width} > {pitch_f}) return \"load_slice(): the window is outside the tensor's rows\";",
                  f"    t->{col_f} = {col_f};"]
    return lines


def _row_window_lines(spec: TilingSpec) -> list[str]:
    """The header's row windows: n, p, o, m, q as exact int64, checked like
    :meth:`TilingSpec.evaluate_row_windows` (whole numbers, every row inside the tensor)."""
    if not spec.row_windows:
        return []
    lines = ["    // row windows (load_rows_bcast with n, p, o, m, q): checked against the shapes"]
    for names, ti, cpps, _ in spec.row_windows:
        nel = mangle("nel", spec.tensors[ti])
        for f, cpp in zip(names, cpps, strict=True):
            lines += [f"    const double {f}d = {cpp};",
                      f"    const int64_t {f} = static_cast<int64_t>({f}d);",
                      f"    if (static_cast<double>({f}) != {f}d) return \"load_rows_bcast(): n, p, o, m and q are whole numbers\";",
                      f"    t->{f} = {f};"]
        n, p, o, m, q = names
        lines += [f"    if ({n} < 1 || {p} < 1 || {o} < 0 || {m} < 1 || {q} < 1) "
                  "return \"load_rows_bcast(): o must be at least 0, n, p, m and q at least 1\";",
                  "    {",
                  f"        int64_t far = (({n} - 1) / {m}) * {q} + (({n} - 1) % {m}) * {p};",
                  f"        if ({n} - 1 >= {m}) far = max(far, (({n} - 1) / {m} - 1) * {q} + ({m} - 1) * {p});",
                  f"        if (static_cast<double>({o} + far + W) > {nel}) "
                  "return \"load_rows_bcast(): the window's rows run past the tensor\";",
                  "    }"]
    return lines


def host_value(e: ir.Expr, dims: list[list[int]], tensors: tuple[str, ...]) -> float:
    """The value of a host scalar of constants and sizes (a load_slice column) at ``dims``:
    the Python mirror of :func:`host_expr` for those."""
    if isinstance(e, ir.Const):
        return float(e.value)
    if isinstance(e, ir.Numel):
        d = dims[tensors.index(e.tensor)]
        if e.dim is None:
            return float(math.prod(d))
        j = e.dim + len(d) if e.dim < 0 else e.dim
        return float(d[j]) if 0 <= j < len(d) else 0.0
    if isinstance(e, ir.Binary) and e.op in ("add", "sub", "mul", "div", "max", "min"):
        a, b = host_value(e.lhs, dims, tensors), host_value(e.rhs, dims, tensors)
        if e.op == "div" and b == 0:
            return math.nan
        return ops.fold(e.op, (a, b))
    if isinstance(e, ir.Unary) and e.op == "neg":
        return -host_value(e.arg, dims, tensors)
    raise ValueError(f"{type(e).__name__} in a load_slice column: use constants, numel(x), size(x, d) and "
                     "+ - * / maximum minimum")


def host_expr(e: ir.Expr) -> str:
    """A host scalar expression as C++ (double precision, compiler builtins only, so the
    header needs no includes and stays valid in the kernel's translation unit)."""
    if isinstance(e, ir.Const):
        if e.value == float("inf") or e.value == float("-inf"):
            return "__builtin_inf()" if e.value > 0 else "(-__builtin_inf())"
        return repr(float(e.value))
    if isinstance(e, ir.ScalarRef):
        return f"static_cast<double>({mangle('sc', e.name)})"
    if isinstance(e, ir.Var):
        return mangle("h", e.name)
    if isinstance(e, ir.Numel) and e.dim is not None:
        return f"dim_of(dims, ranks, {mangle('ti', e.tensor)}, {e.dim})"
    if isinstance(e, ir.Numel):
        return mangle("nel", e.tensor)
    if isinstance(e, ir.Power):  # GCC/Clang builtin: repeated multiplication, one evaluation of the base
        return f"__builtin_powi({host_expr(e.base)}, {e.n})"
    if isinstance(e, ir.Binary):
        a, b = host_expr(e.lhs), host_expr(e.rhs)
        return ops.host_cpp(e.op, (a, b))
    if isinstance(e, ir.Unary):
        return ops.host_cpp(e.op, (host_expr(e.arg),))
    raise ValueError(f"{type(e).__name__} is not a host scalar expression")
