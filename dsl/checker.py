"""Static checks of a parsed program: types, forms, scopes, and (with shapes, tunables and a
SoC) the UB budget — all before anything is built.

A value has a *form*: ``tile`` (a UB tile of the loop's tile shape), ``row`` (``size``
values per row of a rows-loop tile: one, or a group such as the G coefficients of an mHC
mapping), ``col`` (one row broadcast over the rows), ``members`` (``size`` constants shared
by all rows), ``scalar`` (a constant or runtime scalar) or ``mask`` (the result of a
comparison, only usable by ``where``). Tiles also carry a *space*: in a rows loop the
full-row tile and the column-chunk tile have different shapes and cannot be mixed.

Cube stages are checked here too (operand dtypes, what Fixpipe may store, split-K rules),
with the workspaces that carry a cube stage's result to the vector stage after it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import ir, ops
from .parser import DslError


@dataclass(frozen=True)
class VType:
    form: str  # "tile" | "row" | "col" | "members" | "scalar" | "mask"
    dtype: str
    space: str = ""  # tiles: "T" (loop tile) or "C" (column chunk)
    size: int = 1  # row / members: values per row (a group) or shared constants


ARITH_DTYPES = ops.VECTOR_DTYPES
CUBE_IN_DTYPES = ("f16", "bf16", "f32")


@dataclass
class TypedProgram:
    """A program with the type of every expression node (keyed by id) and its scopes."""

    program: ir.Program
    types: dict[int, VType]
    var_types: dict[str, VType]
    loop_space: dict[str, str]  # loop var -> tile space
    chunked: bool  # rows loop whose tiles are column chunks

    def type_of(self, e: ir.Expr) -> VType:
        return self.types[id(e)]


def check_program(program: ir.Program) -> TypedProgram:
    """Type-check a parsed program; raises DslError naming the line of the first problem."""
    return _Checker(program).run()


ROW_MASK = "@row"
"""The space of a mask from a comparison of per-row values (where() then chooses per row)."""

class _Checker:
    def __init__(self, program: ir.Program):
        self.p = program
        self.types: dict[int, VType] = {}
        self.var_types: dict[str, VType] = {}
        self.loop_space: dict[str, str] = {}
        self.inner: ir.InnerLoop | None = None  # the inner loop being checked

    def run(self) -> TypedProgram:
        top_scope: dict[str, VType] = {}
        chunked = False
        seen_loop = False
        for item in self.p.top or (self.p.loop,):
            if isinstance(item, ir.CubeStage):
                self._check_cube_stage(item)
            elif isinstance(item, ir.Loop):
                self._check_loop_header(item)
                chunked = self._check_loop(item, top_scope) or chunked
                seen_loop = True
            elif isinstance(item, ir.Assign):
                t = self._expr(item.value, top_scope, "")
                if t.form != "scalar":
                    raise DslError(f"outside a loop '{item.target}' must be a scalar (constants, Scalar "
                                   "parameters, numel(x), and total_* results of earlier loops)", item.loc)
                top_scope[item.target] = t
                self.var_types[item.target] = t
            elif isinstance(item, ir.Store):
                t = self._expr(item.value, top_scope, "")
                out = self.p.param(item.tensor)
                if t.form != "scalar":
                    raise DslError("store(y, value) outside a loop writes a scalar", item.loc)
                if out.dtype not in ("f32", "f16", "bf16"):
                    raise DslError(f"a scalar output is f32, f16 or bf16, '{item.tensor}' is {out.dtype}", item.loc)
                if not seen_loop:
                    raise DslError("scalar stores come after a distribution loop", item.loc)
        written = {s.tensor for s in self.p.all_stmts() if isinstance(s, ir.Store)}
        if self.p.cube is not None:
            written.add(self.p.cube.target)
        self._check_workspaces()
        for p in self.p.outputs:
            if p.name not in written:
                raise DslError(f"output '{p.name}' is never stored", p.loc)
        return TypedProgram(self.p, self.types, self.var_types, self.loop_space, chunked)

    # ------------------------------------------------------------ cube stage
    def _check_cube_stage(self, c: ir.CubeStage) -> None:
        """Operand dtypes, the value Fixpipe stores, and the split-K rules."""
        p = self.p
        da, db = p.dtype_of(c.a.tensor), p.dtype_of(c.b.tensor)
        if da != db:
            raise DslError(f"mmad operands need one dtype: {c.a.tensor} is {da}, {c.b.tensor} is {db}", c.loc)
        if da not in CUBE_IN_DTYPES:
            raise DslError(f"the cube takes f16, bf16 or f32 operands, not {da}", c.loc)
        tgt = p.dtype_of(c.target)
        if tgt != c.out_dtype:
            raise DslError(f"storing a {c.out_dtype} value into {tgt} '{c.target}': cast(acc, {tgt})", c.store_loc)
        if c.bias is not None:
            self._check_cube_bias(c, da)
        if (isinstance(c.split_k, str) or c.split_k != 1) and not c.ordered_split:  # ordered: support.py
            if not p.is_workspace(c.target):
                raise DslError("split_k > 1 writes one partial result per K split: store to a workspace(f32) "
                               "and reduce it in the vector stage (load(ws, c) sums the splits)", c.store_loc)
            if c.relu:
                raise DslError("relu of a split-K partial sum is wrong: apply it in the vector stage", c.store_loc)
            if tgt != "f32":
                raise DslError(f"split-K partial sums are summed in fp32: workspace(f32), not {tgt}", c.store_loc)
        if c.batched and (c.a.split is not None or c.b.split is not None):
            raise DslError("batched=True takes 3-D operands as they are (no matrix(...) views)", c.loc)

    def _check_cube_bias(self, c: ir.CubeStage, da: str) -> None:
        """accumulator(blk, bias=b): b has the operands' dtype (the bias table converts it to fp32)
        and is added once per output block, so there is one K split."""
        db = self.p.dtype_of(c.bias)
        if db != da:
            raise DslError(f"the bias '{c.bias}' is {db}; it needs the operands' dtype {da} "
                           "(L1 -> bias table converts it to fp32)", c.loc)
        if isinstance(c.split_k, str) or c.split_k != 1:
            raise DslError("a bias in the accumulator would be added once per K split: use split_k=1, or add "
                           "the bias in the vector stage", c.loc)

    def _check_workspaces(self) -> None:
        """A workspace is written by the cube stage and read by the vector stage after it."""
        p, c, v = self.p, self.p.cube, self.p.vector
        target = c.target if c is not None else None
        for w in p.workspaces:
            if w.name != target and not (c is not None and w.name == c.ordered_split):  # ordered: its sums
                raise DslError(f"workspace '{w.name}' is not written by the cube stage", w.loc)
        if target is None or not p.is_workspace(target):
            return
        if v is None:
            raise DslError(f"the cube stage writes workspace '{target}' but there is no rows(...) stage to read it",
                           c.store_loc)
        reads = any(isinstance(e, ir.Load) and e.tensor == target for e in ir.body_exprs(v.body))
        if not reads and v.tensor != target:
            raise DslError(f"the vector stage never reads the workspace '{target}'", v.loc)

    def _check_loop(self, loop: ir.Loop, top_scope: dict[str, VType]) -> bool:
        """Check one distribution loop; total_* results become scalars visible after it."""
        self.cur = loop
        self.loop_space[loop.var] = "T"
        chunk_loops = [s for s in loop.body if isinstance(s, ir.InnerLoop) and s.kind == "chunks"]
        chunked = bool(chunk_loops)
        if loop.axis >= 0 and not chunked:
            raise DslError("rows(axis=...) rows are strided: walk them with 'for c in chunks(t, SIZE)'",
                           loop.loc)
        if loop.kind == "rows" and chunked:
            for sub in ir.body_exprs(loop.body):
                if isinstance(sub, ir.Load) and sub.at == loop.var and sub.mode in ("tile", "bcast"):
                    raise DslError("in a rows loop with column chunks, load inside the chunks loop "
                                   f"(load(x, c)), not load(x, {loop.var})", sub.loc)
        self.grid_names: list[str] = []
        scope = dict(top_scope)
        self._block(loop.body, scope, loop.var, inner=None)
        for name in self.grid_names:
            top_scope[name] = VType("scalar", "f32", "K")
            self.var_types[name] = top_scope[name]
        return chunked

    @staticmethod
    def _at_plain_rows(e: ir.Expr, what: str, loop: ir.Loop, refused: bool = False) -> None:
        """A per-row or per-column operand: at the rows variable of a plain rows loop (``refused``:
        the caller's own reason the loop is not one, e.g. ``flat=``)."""
        if loop.kind != "rows" or loop.axis >= 0 or loop.groups != 1 or refused:
            raise DslError(f"{what} belongs to a plain rows loop", e.loc)
        if e.at != loop.var:
            raise DslError(f"{what} at '{e.at}': use the rows variable", e.loc)

    @staticmethod
    def _host_scalar(v: VType, why: str, loc: ir.Loc) -> None:
        """``v`` must be computable on the host (sizes, constants): a tiling field."""
        if v.form != "scalar" or (v.space or "H") != "H":
            raise DslError(why, loc)

    def _row_access(self, e: ir.Expr, what: str, loop: ir.Loop, loop_var: str, groups: bool = False) -> None:
        """A GM access at computed rows (gathers, index_add, broadcast rows): a plain rows
        loop (``groups``: or one with groups=, whose rows are the split ones), at its variable
        or, when the rows are chunked, at the chunk."""
        if loop.kind != "rows" or loop.axis >= 0 or (loop.groups != 1 and not groups):
            raise DslError(f"{what} belongs to a plain rows loop" + (" (groups= allowed)" if groups else ""),
                           e.loc)
        if e.at not in self.loop_space or e.at not in (loop_var, loop.var):
            raise DslError(f"{what} at '{e.at}': use the rows variable or its chunk", e.loc)
        if e.at == loop.var and any(isinstance(s, ir.InnerLoop) and s.kind == "chunks" for s in loop.body):
            raise DslError(f"in a rows loop with column chunks, {what} is at the chunk", e.loc)

    def _load_slice(self, e: ir.LoadSlice, scope: dict[str, VType], loop: ir.Loop, loop_var: str) -> VType:
        """A column window of a GM tensor: a tiles loop (one row) or a plain rows loop, at its
        variable or its chunk; the column offset is a host scalar (its range is checked with
        the shapes, ``tiling.TilingSpec.evaluate_slices``)."""
        what = "load_slice(x, t, col)"
        if loop.kind == "tiles":
            if e.at != loop.var:
                raise DslError(f"{what} in a tiles loop is at its variable", e.loc)
        else:
            self._row_access(e, what, loop, loop_var)
            if loop.flat or loop.inplace:
                raise DslError(f"{what} reads its own rows: not in a rows(flat=True) or rows(inplace=True) loop",
                               e.loc)
        col = self._expr(e.arg, scope, loop_var)
        if col.form != "scalar" or (col.space or "H") != "H":
            raise DslError(f"{what}: col is a host scalar (constants and sizes, e.g. size(x, -1) / 2)", e.loc)
        if self.p.is_workspace(e.tensor):
            raise DslError(f"{what} reads an In tensor, not the workspace '{e.tensor}'", e.loc)
        return VType("tile", self.p.dtype_of(e.tensor), self.loop_space[e.at])

    def _check_loop_header(self, loop: ir.Loop) -> None:
        first = self.p.loop
        if loop is not first and (loop.kind, loop.tensor, loop.tile, loop.cores, loop.dim, loop.depth,
                                  loop.groups, loop.axis, loop.step_rows, loop.flat, loop.split, loop.hold) != (
                first.kind, first.tensor, first.tile, first.cores, first.dim, first.depth,
                first.groups, first.axis, first.step_rows, first.flat, first.split, first.hold):
            raise DslError("every distribution loop of a kernel has the same header as the first "
                           f"({first.kind}({first.tensor}, ...) with the same sizes): the loops share "
                           "one tiling", loop.loc)
        if loop.kind == "slabs" and loop.dim < 0:
            raise DslError("slabs(dim=...) takes a non-negative axis", loop.loc)
        if loop.flat and loop.kind == "rows" and (loop.axis >= 0 or loop.groups != 1 or any(
                isinstance(s, ir.InnerLoop) and s.kind == "chunks" for s in loop.body)):
            raise DslError("rows(flat=True) reads whole contiguous rows: no axis=, groups= or chunks loop",
                           loop.loc)
        if loop.flat and loop.kind == "slabs" and loop.step_rows is None:
            raise DslError("slabs(flat=True) copies several whole steps at once: it needs rows=", loop.loc)
        if loop.block_max and (loop.step_rows is None or not loop.flat):
            raise DslError("slabs(block_max=True) takes the max of each block of steps read flat: it needs "
                           "rows= and flat=True", loop.loc)
        if loop.split is not None:
            _check_split(loop)
        for size in (loop.tile, loop.cores, loop.step_rows, loop.split):
            if isinstance(size, str) and size not in {t.name for t in self.p.tunables}:
                raise DslError(f"'{size}' is not a tunable", loop.loc)

    # ------------------------------------------------------------ statements
    def _block(self, stmts, scope: dict[str, VType], loop_var: str, inner: ir.InnerLoop | None) -> None:
        outer_names = set(scope)
        for s in stmts:
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.GridReduce):
                g = s.value
                a = self._expr(g.arg, scope, loop_var)
                want = "row" if self.cur.kind == "rows" else "tile"
                if a.form != want:
                    raise DslError(f"total_{g.op}() in a {self.cur.kind} loop takes a {want} value"
                                   + (" (reduce the tile with row_sum/row_max first)" if want == "row" else ""),
                                   s.loc)
                self._arith_operand(a, g, f"total_{g.op}")
                if a.dtype != "f32":
                    raise DslError(f"total_{g.op}() accumulates f32 values: cast first", s.loc)
                if s.target in scope or s.target in self.grid_names:
                    raise DslError(f"'{s.target}' is already defined; a total_* result needs a new name", s.loc)
                self.types[id(g)] = VType("scalar", "f32", "K")
                self.grid_names.append(s.target)
                continue
            if isinstance(s, ir.Assign):
                t = self._expr(s.value, scope, loop_var)
                if t.form == "mask":
                    raise DslError("a comparison can only be used inside where(cond, a, b)", s.loc)
                if t.form == "scalar":
                    raise DslError(f"'{s.target}' would be a plain scalar: use the expression where it is needed", s.loc)
                if inner is not None and s.target in outer_names:
                    prev = scope[s.target]
                    if prev != t:
                        raise DslError(f"accumulator '{s.target}' changes type from {prev.form}/{prev.dtype} "
                                       f"to {t.form}/{t.dtype} inside the loop", s.loc)
                    if t.form in ("tile", "col") and self.p.loop.kind == "rows":
                        raise DslError("a rows-loop accumulator over column chunks must be a row value "
                                       "(row_fill/row_sum/row_max...): each chunk covers other columns", s.loc)
                scope[s.target] = t
                self.var_types[s.target] = t
            elif isinstance(s, ir.Store):
                self._store(s, scope, loop_var)
            elif isinstance(s, ir.InnerLoop):
                if inner is not None:
                    raise DslError("inner loops do not nest", s.loc)
                space = "C" if s.kind == "chunks" else "T"
                self.loop_space[s.var] = space
                if s.kind == "chunks" and isinstance(s.size, str) and s.size not in {t.name for t in self.p.tunables}:
                    raise DslError(f"'{s.size}' is not a tunable", s.loc)
                child = dict(scope)
                self.inner = s
                self._block(s.body, child, s.var, s)
                self.inner = None
                # only loop-carried updates of outer names survive the loop
                for name in scope:
                    scope[name] = child[name]

    def _store(self, s: ir.Store, scope, loop_var: str) -> None:
        t = self._expr(s.value, scope, loop_var)
        if self.p.is_workspace(s.tensor):
            raise DslError(f"workspace '{s.tensor}' is written by the vector stage; workspaces carry the "
                           "cube result to the vector stage", s.loc)
        out = self.p.param(s.tensor)
        loop = self.cur
        if s.at not in self.loop_space:
            raise DslError(f"'{s.at}' is not a loop variable", s.loc)
        if t.form in ("mask", "scalar", "col", "members"):
            raise DslError(f"store() takes a tile or per-row values, not a {t.form}", s.loc)
        if s.part is not None and not self._parts_of(s.at):
            raise DslError(f"store(y, {s.at}, v, part) writes one part of a row: use it in "
                           f"`for {s.at} in chunks(t, SIZE, parts=P)`", s.loc)
        if t.dtype != out.dtype:
            raise DslError(f"storing a {t.dtype} value into {out.dtype} output '{s.tensor}': cast it first "
                           f"(cast(v, {out.dtype}))", s.loc)
        if t.form == "row":
            if loop.kind != "rows" or s.at != loop.var:
                raise DslError("a row value is stored once per rows tile: store(y, t, v) at the rows loop variable", s.loc)
        elif t.space != self.loop_space[s.at]:
            raise DslError(f"value stored at '{s.at}' has the shape of another loop's tile", s.loc)

    # ------------------------------------------------------------ expressions
    def _expr(self, e: ir.Expr, scope: dict[str, VType], loop_var: str) -> VType:
        t = self._infer(e, scope, loop_var)
        self.types[id(e)] = t
        return t

    def _infer(self, e: ir.Expr, scope, loop_var: str) -> VType:
        loop = self.cur if loop_var else None
        if isinstance(e, ir.Const):
            return VType("scalar", "f32", "H")
        if isinstance(e, ir.ScalarRef):
            return VType("scalar", self.p.param(e.name).dtype, "H")
        if isinstance(e, ir.Numel):
            return VType("scalar", "f32", "H")
        if isinstance(e, ir.GridReduce):
            raise DslError(f"total_{e.op}() is a whole assignment inside a loop: name = total_{e.op}(v)",
                           e.loc)
        if loop is None:
            if isinstance(e, ir.Var):
                if e.name not in scope:
                    raise DslError(f"'{e.name}' is not defined here (only scalars and total_* results "
                                   "of earlier loops are visible outside loops)", e.loc)
                return scope[e.name]
            if isinstance(e, (ir.Binary, ir.Unary, ir.Power)):
                return self._scalar_expr(e, scope)
            raise DslError(f"{type(e).__name__} needs a loop: outside loops only scalar arithmetic "
                           "is allowed", e.loc)
        if isinstance(e, ir.Scan):
            if loop.kind != "rows":
                raise DslError("scan_*() runs along the rows of a rows(...) loop", e.loc)
            a = self._expr(e.arg, scope, loop_var)
            c = self._expr(e.carry, scope, loop_var)
            if a.form != "tile" or c.form != "row" or a.dtype != c.dtype:
                raise DslError(f"scan_{e.op}(v, carry) takes a tile and a row value of the same dtype "
                               "(start with row_fill(0.0))", e.loc)
            self._arith_operand(a, e, f"scan_{e.op}")
            return a
        if isinstance(e, ir.RowLast):
            a = self._expr(e.arg, scope, loop_var)
            if loop.kind != "rows" or a.form != "tile":
                raise DslError(f"row_{'first' if e.first else 'last'}(v) takes a tile of a rows loop", e.loc)
            return VType("row", a.dtype)
        if isinstance(e, ir.Pick):
            if loop.kind != "rows" or e.at != loop.var:
                raise DslError("pick(x, t, idx) reads one element per row at the rows loop variable", e.loc)
            if self.p.param(e.index).dtype not in ("i32", "i64"):
                raise DslError(f"pick(): index tensor '{e.index}' must be i32 or i64", e.loc)
            return VType("row", self.p.dtype_of(e.tensor))
        if isinstance(e, ir.LoadRowsBcast):
            d = self._expr(e.arg, scope, loop_var)
            what = "load_rows_bcast(x, t, d" + (", n, p, o[, m, q])" if e.window else ")")
            self._row_access(e, what, loop, loop_var, groups=True)
            self._host_scalar(d, f"{what}: d is a host scalar (sizes, constants)", e.loc)
            if e.window is not None:
                if self.p.cube is not None:
                    raise DslError(f"{what}: a window of rows is read by vector kernels only (no cube stage)", e.loc)
                if self.p.is_workspace(e.tensor):
                    raise DslError(f"{what} reads an In tensor, not the workspace '{e.tensor}'", e.loc)
                for name, w in zip("npomq", e.window, strict=True):
                    self._host_scalar(self._expr(w, scope, loop_var),
                                      f"{what}: {name} is a host scalar (sizes, constants)", e.loc)
            return VType("tile", self.p.dtype_of(e.tensor), self.loop_space[e.at])
        if isinstance(e, ir.LoadEvery):
            d = self._expr(e.arg, scope, loop_var)
            what = "load_every(v, t, d)"
            if loop.kind != "rows" or loop.axis >= 0 or loop.flat:
                raise DslError(f"{what} belongs to a rows loop (plain, dims= or groups=; not flat or axis=)", e.loc)
            if e.at not in self.loop_space or e.at not in (loop_var, loop.var):
                raise DslError(f"{what} at '{e.at}': use the rows variable or its chunk", e.loc)
            if e.at == loop.var and any(isinstance(s, ir.InnerLoop) and s.kind == "chunks" for s in loop.body):
                raise DslError(f"in a rows loop with column chunks, {what} is at the chunk", e.loc)
            self._host_scalar(d, f"{what}: d is a host scalar (sizes, constants)", e.loc)
            return VType("tile", self.p.dtype_of(e.tensor), self.loop_space[e.at])
        if isinstance(e, ir.LoadPerRowEvery):
            d = self._expr(e.arg, scope, loop_var)
            what = "load_per_row(v, t, d)"
            self._at_plain_rows(e, what, loop)
            self._host_scalar(d, f"{what}: d is a host scalar (sizes, constants)", e.loc)
            return VType("row", self.p.dtype_of(e.tensor))
        if isinstance(e, ir.LoadBcastEvery):
            d = self._expr(e.arg, scope, loop_var)
            what = "load_bcast_every(v, t, d)"
            self._at_plain_rows(e, what, loop, loop.flat or self.p.cube is not None)
            if any(isinstance(s, ir.InnerLoop) and s.kind == "chunks" for s in ir.walk_stmts(loop.body)):
                raise DslError(f"{what} reads whole rows: a rows loop without column chunks", e.loc)
            self._host_scalar(d, f"{what}: d is a host scalar (sizes, constants)", e.loc)
            return VType("col", self.p.dtype_of(e.tensor), self.loop_space[e.at])
        if isinstance(e, ir.RowPosition):
            what = "row_position(t, d, n)"
            self._at_plain_rows(e, what, loop, self.p.cube is not None)
            for a in (e.arg, e.count):
                self._host_scalar(self._expr(a, scope, loop_var), f"{what}: d and n are host scalars (sizes, constants)",
                                  e.loc)
            return VType("row", "f32")
        if isinstance(e, ir.LoadSlice):
            return self._load_slice(e, scope, loop, loop_var)
        if isinstance(e, ir.IndexAddRows):
            a = self._expr(e.arg, scope, loop_var)
            what = "index_add_rows(acc, src, t, idx, dim)"
            self._row_access(e, what, loop, loop_var)
            if a.form != "tile" or a.dtype != "f32" or self.p.dtype_of(e.tensor) != "f32":
                raise DslError(f"{what}: acc is an f32 tile and src an f32 tensor", e.loc)
            if self.p.param(e.index).dtype not in ("i32", "i64"):
                raise DslError(f"{what}: index tensor '{e.index}' must be i32 or i64", e.loc)
            return VType("tile", "f32", self.loop_space[e.at])
        if isinstance(e, (ir.GatherRows, ir.GatherCols)):
            what = "gather_rows(x, t, idx, dim)" if isinstance(e, ir.GatherRows) else \
                "select_cols(x, t, idx)" if e.shared else "gather_cols(x, t, idx)"
            self._row_access(e, what, loop, loop_var)
            if self.p.param(e.index).dtype not in ("i32", "i64"):
                raise DslError(f"{what}: index tensor '{e.index}' must be i32 or i64", e.loc)
            if self.p.dtype_of(e.tensor) not in ("f32", "f16", "bf16", "i32"):
                raise DslError(f"{what}: '{e.tensor}' must be f32, f16, bf16 or i32", e.loc)
            return VType("tile", self.p.dtype_of(e.tensor), self.loop_space[e.at])
        if isinstance(e, ir.Binary) and e.op == "pow":
            return self._scalar_expr(e, scope)
        if isinstance(e, ir.Extent):
            if e.loop_var != loop.var or loop.kind == "tiles":
                raise DslError("width(t) is the row width of a rows loop or the reduced extent of a slabs loop", e.loc)
            return VType("scalar", "f32", "L")
        if isinstance(e, ir.Position):
            return self._position(e, loop, loop_var)
        if isinstance(e, ir.WindowRecip):
            if loop.kind != "windows" or e.loop_var != loop.var or loop_var != loop.var:
                raise DslError("window_recip(t) takes the windows loop variable, outside the taps loop "
                               "(one value per output element)", e.loc)
            return VType("tile", "f32", self.loop_space[e.loop_var])
        if isinstance(e, ir.ScalarLoad):
            if self.p.dtype_of(e.tensor) not in ("f32", "f16", "bf16"):
                raise DslError("load_scalar() reads an f32, f16 or bf16 tensor", e.loc)
            return VType("scalar", "f32", "K")
        if isinstance(e, ir.StepLoad):
            if loop.kind != "slabs" or e.loop_var != loop_var or e.loop_var == loop.var:
                raise DslError("load_step(v, k) reads one value per step: at the steps variable of a slabs loop",
                               e.loc)
            if self.p.dtype_of(e.tensor) not in ("f32", "f16", "bf16") or self.p.is_workspace(e.tensor):
                raise DslError("load_step(v, k) reads an f32, f16 or bf16 In tensor", e.loc)
            if loop.step_rows is not None:  # a block of steps a copy: row j of the block is step k0 + j
                return VType("tile", "f32", self.loop_space[e.loop_var])
            return VType("scalar", "f32", "L")
        if isinstance(e, ir.Var):
            if e.name not in scope:
                raise DslError(f"'{e.name}' is not defined here (values defined inside an inner loop "
                               "are not visible after it)", e.loc)
            return scope[e.name]
        if isinstance(e, ir.Load) and e.mode == "members":
            if loop.kind != "rows":
                raise DslError("load_members() belongs to a rows loop", e.loc)
            return VType("members", self.p.dtype_of(e.tensor), "", e.size)
        if isinstance(e, ir.Load):
            if e.at not in self.loop_space:
                raise DslError(f"'{e.at}' is not a loop variable in scope", e.loc)
            if e.at != loop_var and e.at != loop.var:
                raise DslError(f"load at '{e.at}' is outside that loop", e.loc)
            if loop.kind == "windows" and (e.at == loop.var or e.tensor != loop.tensor or e.mode != "tile"):
                raise DslError(f"in a windows loop, load the pooled tensor per tap: for w in taps(t): "
                               f"load({loop.tensor}, w)", e.loc)
            if loop.kind == "slabs" and e.at == loop.var and e.tensor == loop.tensor:
                raise DslError(f"'{e.tensor}' is the reduced tensor: load it per step (for k in steps(t): load({e.tensor}, k))", e.loc)
            dtype = self.p.dtype_of(e.tensor)
            if e.mode in ("cols", "group"):
                if loop.kind != "rows" or e.at != loop.var:
                    raise DslError(f"load_{e.mode}() reads per-row values at the rows variable", e.loc)
                return VType("row", dtype, "", e.size)
            if e.part is not None and not self._parts_of(e.at):
                raise DslError(f"load(x, {e.at}, part) reads one part of a row: use it in "
                               f"`for {e.at} in chunks(t, SIZE, parts=P)`", e.loc)
            if e.mode != "tile":
                if loop.kind != "rows" or (e.mode == "per_row" and e.at != loop.var):
                    raise DslError(f"load_{e.mode}() belongs to a rows loop ("
                                   + ("at the rows variable" if e.mode == "per_row" else "at t or a chunk") + ")", e.loc)
                return VType("col" if e.mode == "bcast" else "row", dtype, self.loop_space[e.at] if e.mode == "bcast" else "")
            return VType("tile", dtype, self.loop_space[e.at])
        if isinstance(e, ir.Fill):
            if e.kind == "row":
                if loop.kind != "rows":  # noqa: SIM102
                    raise DslError("row_fill() is for rows loops", e.loc)
                return VType("row", e.dtype)
            return VType("tile", e.dtype, self.loop_space[loop_var])
        if isinstance(e, ir.Cast):
            a = self._expr(e.arg, scope, loop_var)
            if a.form in ("scalar", "mask"):
                raise DslError("cast() takes a tile or row value", e.loc)
            if e.dtype in ("i8", "u8") or (e.dtype == "bool" and (a.dtype not in ("f32", "f16") or a.form != "tile")):
                raise DslError(f"casting {a.dtype} to {e.dtype} is not supported; compare and where() instead "
                               "(cast(v, bool) takes an f32/f16 tile: v != 0)", e.loc)
            return replace(a, dtype=e.dtype)
        if isinstance(e, ir.Index):
            a = self._expr(e.arg, scope, loop_var)
            if a.form not in ("row", "members"):
                raise DslError(f"indexing takes a group of per-row values or members, not a {a.form}", e.loc)
            if e.stop > a.size:
                raise DslError(f"index [{e.start}:{e.stop}] is outside a group of {a.size}", e.loc)
            return replace(a, size=e.stop - e.start)
        if isinstance(e, ir.Sinkhorn):
            a = self._expr(e.arg, scope, loop_var)
            if a.form != "row" or a.size != e.n * e.n:
                raise DslError(f"sinkhorn(g, {e.n}, ...) takes a group of {e.n * e.n} per-row values, got "
                               f"{a.form}/{a.size}", e.loc)
            self._arith_operand(a, e, "sinkhorn")
            return a
        if isinstance(e, ir.Unary):
            a = self._expr(e.arg, scope, loop_var)
            if a.form == "scalar":
                return self._scalar_expr(e, scope, loop_var)
            self._arith_operand(a, e, e.op)
            if a.dtype not in ops.UNARY[e.op].dtypes:
                want = "a float" if "i32" not in ops.UNARY[e.op].dtypes else "an"
                raise DslError(f"{e.op}() needs {want} {'/'.join(ops.UNARY[e.op].dtypes)} value, got "
                               f"{a.dtype}: cast it first", e.loc)
            return a
        if isinstance(e, ir.Power):
            a = self._expr(e.base, scope, loop_var)
            if a.form == "scalar":
                return self._scalar_expr(e, scope, loop_var)
            if a.form == "mask":
                raise DslError("a comparison can only be used inside where(cond, a, b)", e.loc)
            self._arith_operand(a, e, "**")
            return a
        if isinstance(e, ir.LeakyRelu):
            a = self._expr(e.arg, scope, loop_var)
            self._arith_operand(a, e, "leaky_relu")
            return a
        if isinstance(e, ir.RowReduce):
            if loop.kind != "rows":
                raise DslError(f"row_{e.op}() reduces rows of a rows(...) loop; use slabs/steps for other axes", e.loc)
            a = self._expr(e.arg, scope, loop_var)
            if a.form != "tile":
                raise DslError(f"row_{e.op}() takes a tile", e.loc)
            self._arith_operand(a, e, f"row_{e.op}")
            return VType("row", a.dtype)
        if isinstance(e, (ir.Binary, ir.Compare)):
            a = self._expr(e.lhs, scope, loop_var)
            b = self._expr(e.rhs, scope, loop_var)
            name = e.op
            for x in (a, b):
                if x.form == "mask":
                    raise DslError("a comparison can only be used inside where(cond, a, b)", e.loc)
                self._arith_operand(x, e, name)
            if a.form == "scalar" and b.form == "scalar" and isinstance(e, ir.Binary):
                return self._scalar_expr(e, scope, loop_var)
            if a.form == "scalar" and b.form == "scalar":
                raise DslError("a comparison of two scalars has no tile to live in", e.loc)
            ta = a if a.form != "scalar" else b
            tb = b if b.form != "scalar" else a
            if ta.dtype != tb.dtype and a.form != "scalar" and b.form != "scalar":
                raise DslError(f"operands have different dtypes ({a.dtype} and {b.dtype}): cast one", e.loc)
            if isinstance(e, ir.Binary) and ta.dtype not in ops.BINARY[e.op].dtypes:
                raise DslError(f"{e.op} of {ta.dtype} values is not supported: cast to f32", e.loc)
            forms = {a.form, b.form} - {"scalar"}
            spaced = [x for x in (a, b) if x.form in ("tile", "col")]
            if len(spaced) == 2 and spaced[0].space != spaced[1].space:
                raise DslError("operands are tiles of different loops (full rows vs column chunks)", e.loc)
            if forms == {"row", "col"}:
                raise DslError("a per-row value and a per-column value have no common tile (outer products are not supported)", e.loc)
            if "members" in forms or any(x.form == "row" and x.size != 1 for x in (a, b)):
                return self._group_binary(e, a, b, forms)
            if isinstance(e, ir.Compare):
                if forms not in ({"tile"}, {"row"}):
                    raise DslError("comparisons take tiles and scalars, or per-row values and scalars", e.loc)
                if ta.dtype not in ("f32", "f16"):
                    raise DslError("comparisons take f32 or f16 tiles", e.loc)
                return VType("mask", ta.dtype, ROW_MASK if forms == {"row"} else ta.space)
            if "tile" in forms:
                tile = a if a.form == "tile" else b
                return VType("tile", tile.dtype, tile.space)
            return ta
        if isinstance(e, ir.Select):
            c = self._expr(e.cond, scope, loop_var)
            a = self._expr(e.if_true, scope, loop_var)
            b = self._expr(e.if_false, scope, loop_var)
            if c.form != "mask":
                raise DslError("where() needs a comparison", e.loc)
            if c.space == ROW_MASK:  # per-row values compared: choose between per-row values
                for x in (a, b):
                    if x.form not in ("row", "scalar") or x.form == "row" and (x.size != 1 or x.dtype != c.dtype):
                        raise DslError("where() on a comparison of per-row values chooses between per-row "
                                       "values of its dtype or constants", e.loc)
                return VType("row", c.dtype)
            for x in (a, b):
                if x.form not in ("tile", "scalar"):
                    raise DslError("where() chooses between tiles or constants", e.loc)
            tiles = [x for x in (a, b) if x.form == "tile"]
            dtype = tiles[0].dtype if tiles else c.dtype
            for x in tiles:
                if x.dtype != dtype or x.space != c.space:
                    raise DslError("where() operands must have the same dtype and tile shape", e.loc)
            if dtype not in ("f32", "f16"):
                raise DslError("where() selects between f32 or f16 values", e.loc)
            if dtype != c.dtype:
                raise DslError("where(): the compared values and the chosen values must have the same dtype", e.loc)
            return VType("tile", dtype, c.space)
        raise DslError(f"unsupported expression {type(e).__name__}", e.loc)

    def _position(self, e: ir.Position, loop: ir.Loop, loop_var: str) -> VType:
        """position(k) in a slabs steps loop is a scalar; position(t|c) in a plain rows loop is a
        tile (a strided rows(axis=) or grouped row has no single column numbering)."""
        if e.loop_var != loop_var:
            raise DslError("position(at) takes the innermost loop variable (a step, chunk or rows tile)", e.loc)
        if loop.kind == "slabs" and e.loop_var != loop.var:
            if loop.step_rows is not None:  # a block of steps a copy: row j of the block is step k0 + j
                return VType("tile", "f32", self.loop_space[e.loop_var])
            return VType("scalar", "f32", "L")
        if loop.kind == "rows" and loop.axis < 0 and loop.groups == 1 and self.p.cube is None:
            return VType("tile", "f32", self.loop_space[e.loop_var])
        raise DslError("position() is the step of a slabs steps loop or the column of a plain rows loop", e.loc)

    def _group_binary(self, e: ir.Expr, a: VType, b: VType, forms: set[str]) -> VType:
        """An operation involving groups of per-row values or members."""
        ref = a if a.form != "scalar" else b
        if isinstance(e, ir.Compare):
            raise DslError("comparisons take tiles and scalars", e.loc)
        if forms == {"tile", "row"}:
            g = a if a.form == "row" else b
            raise DslError(f"a tile combines with one value per row, not a group of {g.size}: index it", e.loc)
        if forms <= {"row"}:
            sa = a.size if a.form == "row" else b.size
            sb = b.size if b.form == "row" else a.size
            if sa != sb and 1 not in (sa, sb):
                raise DslError(f"groups of {sa} and {sb} per-row values do not combine", e.loc)
            return VType("row", ref.dtype, "", max(sa, sb))
        if forms == {"row", "members"}:
            g = a if a.form == "row" else b
            m = b if a.form == "row" else a
            if m.size != g.size and g.size != 1:
                raise DslError(f"a group of {g.size} combines with {m.size} members", e.loc)
            return VType("row", ref.dtype, "", m.size)
        if forms == {"members"}:
            if a.form == "members" and b.form == "members" and a.size != b.size:
                raise DslError("members of different sizes", e.loc)
            return VType("members", ref.dtype, "", ref.size)
        raise DslError(f"{a.form} and {b.form} values do not combine", e.loc)

    def _parts_of(self, var: str) -> int:
        """parts= of the enclosing chunks loop if it is ``var`` (0 otherwise)."""
        s = self.inner
        return s.parts if s is not None and s.var == var and s.kind == "chunks" and s.parts > 1 else 0

    def _scalar_expr(self, e: ir.Expr, scope, loop_var: str = "") -> VType:
        """Arithmetic on scalars. Space H = computable on the host from constants, Scalar
        parameters and numel (the tiling does it once); K = involves a total_* result (the
        kernel computes it); L = involves width(t) (only inside the loop)."""
        parts = [e.lhs, e.rhs] if isinstance(e, ir.Binary) else [e.base] if isinstance(e, ir.Power) else [e.arg]
        spaces = set()
        for x in parts:
            t = self._expr(x, scope, loop_var)
            if t.form != "scalar":
                raise DslError("this operation takes scalars only here", e.loc)
            spaces.add(t.space or "H")
        space = "K" if "K" in spaces else ("L" if "L" in spaces else "H")
        op = "mul" if isinstance(e, ir.Power) else e.op
        if space != "H" and not ops.kernel_scalar_ok(op):
            raise DslError(f"{op} on a kernel-side scalar is not supported (only on host scalars: "
                           "constants, Scalar parameters, numel)", e.loc)
        return VType("scalar", "f32", space)

    def _arith_operand(self, t: VType, e: ir.Expr, what: str) -> None:
        if t.form == "scalar":
            return
        if t.dtype == "bf16":
            raise DslError(f"{what}: bf16 has no vector arithmetic on Ascend; cast(v, f32) first", e.loc)
        if t.dtype not in ARITH_DTYPES:
            raise DslError(f"{what}: {t.dtype} values must be cast (e.g. cast(v, f32)) before arithmetic", e.loc)


def _check_split(loop: ir.Loop) -> None:
    """``slabs(rows=R, split=S)``: each core reduces a slice of K into per-core partials, which
    are combined after a SyncAll (``lowering/split_k.py``). The partials are the steps loop's
    accumulators, so the body must be: accumulator set-up, one steps loop, then statements that
    read only what the steps loop leaves (and their own values); nothing is stored before the
    steps, and no total_* value (it has its own cross-core combine)."""
    if loop.step_rows is None:
        raise DslError("slabs(split=...) cuts the steps of a blocked slabs loop across cores: it needs rows=", loop.loc)
    at = [i for i, s in enumerate(loop.body) if isinstance(s, ir.InnerLoop)]
    if len(at) != 1 or loop.body[at[0]].kind != "steps":
        raise DslError("slabs(split=...): the loop body holds exactly one steps loop (its accumulators "
                       "are the partials each core combines)", loop.loc)
    pre, steps, post = loop.body[:at[0]], loop.body[at[0]], loop.body[at[0] + 1:]
    for s in ir.walk_stmts(loop.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.GridReduce):
            raise DslError("slabs(split=...) has no total_* values (they combine across cores on their own)", s.loc)
    for s in pre:
        if isinstance(s, ir.Store):
            raise DslError("slabs(split=...): nothing is stored before the steps loop (each slice of K "
                           "would store it again)", s.loc)
    left = {s.target for s in ir.walk_stmts(steps.body) if isinstance(s, ir.Assign)}
    only_pre = {s.target for s in pre if isinstance(s, ir.Assign)} - left
    for s in post:
        for e in ir.stmt_exprs(s):
            for x in ir.walk_exprs(e):
                if isinstance(x, ir.Var) and x.name in only_pre:
                    raise DslError(f"slabs(split=...): after the steps loop '{x.name}' is not known (the "
                                   "combine sees only the steps loop's accumulators); compute it after "
                                   "the steps loop", s.loc)
        if isinstance(s, ir.Assign):
            only_pre.discard(s.target)

