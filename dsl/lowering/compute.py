"""Pass 3 — kernel compute: every DSL statement becomes AscendC calls with the queue protocol.

Values live in UB buffers chosen here: loads in their tensor's VECIN queue, stored results
straight in the output's VECOUT queue, intermediates in a pool of VECCALC buffers that are
reused as soon as a value is dead (in place where an operand is a dead temporary). The
pool sizes found here are the UB plan: the tiling pass turns them into byte sizes and the
checker into a budget, before anything is built. In a ``rows(inplace=True)`` loop the loop
tensor's tile goes to a VECIN->VECOUT bound queue and the tile store is computed into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import ir, ops
from ..checker import TypedProgram
from ..names import mangle
from ..parser import DslError
from .compute_flat import FlatOps
from .compute_groups import GroupOps
from .compute_inplace import InplaceOps
from .compute_ops import (  # noqa: F401 - the pass's types and tables, re-exported
    CMP,
    CTYPE,
    ERF_A,
    ERF_P,
    NBYTES,
    REDUCE,
    VEC1,
    VEC2,
    Buffer,
    ComputeOps,
    Pool,
    Val,
    cconst,
)
from .compute_windows import WindowOps
from .split_k import SplitKOps
from .step_blockmax import BlockMaxOps
from .step_folds import FOLD_OP, blocked, blocked_slab_tile, step_folds
from .store_behind import Behind, BehindOps
from .support import check_cube_supported, check_vector_supported


@dataclass
class KernelPlan:
    body: list[str]  # the whole of Process() after `core` is defined
    buffers: list[Buffer]
    roles: dict[str, str]  # tensor -> "tile" | "bcast" | "per_row" | "row_out" | "step" | "outer" | "scalar_out" | "index"
    host_scalars: list[tuple[str, ir.Expr]]  # derived scalars the host tiling computes
    grid_loops: int = 0  # loops with total_* reductions (each needs a GM workspace slot per core)
    split_accs: int = 0  # slabs(split=S): accumulator rows each item writes to the GM workspace
    #: column windows (load_slice): (col field, pitch field, tensor, col expression), one per window
    slices: list[tuple[str, str, str, ir.Expr]] = field(default_factory=list)
    #: row windows (load_rows_bcast with n, p, o, m, q): (their fields, tensor, expressions)
    row_windows: list[tuple[tuple[str, ...], str, tuple[ir.Expr, ...]]] = field(default_factory=list)


GRID_INIT = {o.name: cconst(o.identity) for o in ops.REDUCE.values()}
SCALAR_FN = {o.name: o.kernel_scalar for o in ops.UNARY.values() if o.kernel_scalar}


def loop_header(kind: str, chunked: bool, unit: int, stride: bool = True) -> list[str]:
    """The per-core split and the tile loop's opening lines (the body follows, then '}');
    ``stride=False``: the UB row stride is each chunks loop's own (a rows stage after a cube
    stage)."""
    if kind == "windows":  # output rows [P*OD*OH, OW]: R rows of one (plane, od) x a column chunk
        return [
            "const int64_t myUnits = td_.baseUnits + (core < td_.bigCores ? 1 : 0);",
            "const int64_t u0 = core * td_.baseUnits + acx_min(core, td_.bigCores);",
            "const int64_t wp = td_.chunkPad;  // UB row stride of a value tile",
            "for (int64_t ut = u0; ut < u0 + myUnits; ++ut) {  // (plane, od, row tile) units",
            "const int64_t u = ut / td_.rowTiles;  // the (plane, od)",
            "{ const int64_t oh0 = (ut % td_.rowTiles) * td_.tileRows;",
            "    const int64_t r = acx_min(td_.tileRows, td_.OH - oh0);",
            "    const int64_t gr = u * td_.OH + oh0;  // first global output row of this tile",
            "    for (int64_t c0 = 0; c0 < td_.OW; c0 += td_.chunk) {  // output column chunks",
            "    const int64_t w = acx_min(td_.chunk, td_.OW - c0);",
            "    const int64_t cnt = r * wp;",
        ]
    if kind == "tiles":
        return [
            "const int64_t units = td_.baseUnits + (core < td_.bigCores ? 1 : 0);",
            f"const int64_t start = (core * td_.baseUnits + acx_min(core, td_.bigCores)) * {unit};",
            f"const int64_t len = acx_min(units * {unit}, td_.n - start);",
            "for (int64_t off = 0; off < len; off += td_.tileLen) {",
            "    const int64_t n = acx_min(td_.tileLen, len - off);",
            "    const int64_t g = start + off;  // element offset in GM",
            "    const int64_t cnt = n;",
        ]
    if kind == "rows":
        out = [
            "const int64_t rows = td_.baseRows + (core < td_.bigCores ? 1 : 0);",
            "const int64_t row0 = core * td_.baseRows + acx_min(core, td_.bigCores);",
            "const int64_t wp = td_.chunkPad;  // UB row stride (elements, 32 B multiple)",
        ][:None if stride else 2] + [
            "for (int64_t i = 0; i < rows; i += td_.tileRows) {",
            "    const int64_t r = acx_min(td_.tileRows, rows - i);",
            "    const int64_t gr = row0 + i;  // first global row of this tile",
        ]
        if not chunked:
            out += ["    const int64_t w = td_.W;", "    const int64_t c0 = 0;", "    const int64_t cnt = r * wp;"]
        return out
    return [
        "const int64_t items = td_.baseItems + (core < td_.bigCores ? 1 : 0);",
        "const int64_t item0 = core * td_.baseItems + acx_min(core, td_.bigCores);",
        "for (int64_t j = 0; j < items; ++j) {",
        "    const int64_t a = (item0 + j) / td_.blocksPerOuter;",
        "    const int64_t b0 = ((item0 + j) % td_.blocksPerOuter) * td_.tileLen;",
        "    const int64_t cnt = acx_min(td_.tileLen, td_.B - b0);",
    ]


MAX_KERNEL_LINES = 20_000
"""Budget of generated Process() lines. Real kernels use a few hundred; the budget stops a
hostile program from making the compiler chew megabytes of C++ (checked before any build)."""


def plan_kernel(tp: TypedProgram) -> KernelPlan:
    """Lower the loop body of a checked program to AscendC statements plus its UB plan."""
    check_vector_supported(tp)
    plan = _Compute(tp, unit_elems(tp.program)).run()
    if len(plan.body) > MAX_KERNEL_LINES:
        raise DslError(f"the lowered kernel has {len(plan.body)} lines of AscendC; the budget is "
                       f"{MAX_KERNEL_LINES}: simplify the program")
    return plan


def plan_rows_stage(tp: TypedProgram) -> KernelPlan:
    """Lower the rows stage of a checked ``@cube_kernel`` (its AIV launch) with the same pass:
    the body of Process() after `core` and the UB plan, in the cube tiling's names."""
    check_cube_supported(tp)
    plan = _Compute(tp, 16, stage=tp.program.vector).run()
    if len(plan.body) > MAX_KERNEL_LINES:
        raise DslError(f"the lowered vector stage has {len(plan.body)} lines of AscendC; the budget is "
                       f"{MAX_KERNEL_LINES}: simplify the program")
    return plan


def unit_elems(program: ir.Program) -> int:
    """Row/tile alignment in elements: 32 B of the narrowest type in use, so every buffer's
    rows start 32 B aligned whatever its dtype (a wider type just gets a longer row)."""
    nbytes = [NBYTES[p.dtype] for p in program.tensors if p.dtype != "i64"]
    nbytes += [NBYTES[e.dtype] for e in ir.program_exprs(program) if isinstance(e, ir.Cast)]
    return 32 // min(nbytes)


class _Compute(GroupOps, WindowOps, FlatOps, InplaceOps, BehindOps, BlockMaxOps, SplitKOps, ComputeOps):
    """The vector compute pass. ``stage``: the rows stage of a @cube_kernel, lowered alone
    (its tiling is the cube tiling: chunks loop k has fields ch<k>/pw<k>, see compute_groups)."""

    def __init__(self, tp: TypedProgram, unit: int = 8, stage: ir.Loop | None = None):
        self.tp = tp
        self.p = tp.program
        self.after_cube = stage is not None
        self.loop = stage or self.p.loop
        self.chunks = [s for s in self.loop.body if isinstance(s, ir.InnerLoop)] if stage else []
        self.k = -1  # the chunks loop being lowered (rows stage after a cube stage)
        self.prefetched: dict[tuple, Val] = {}  # its loads, issued at its top
        self.store_n = 0
        self.tables: set[str] = set()  # Gather offset tables, built once before the rows loop
        self.init_lines: list[str] = []
        self.scratch: list[str] = []  # bytes each table build needs of the scratch buffer
        self.extra_buffers: list[Buffer] = []
        self.unit = unit
        self.lines: list[str] = []
        self.indent = 0
        self.pools = {
            "tmp": Pool("tmp", "align_up(tileElems, 128) * 4", "tmpBuf"),
            "row": Pool("row", "rowElems * 4", "rowBuf"),
            "col": Pool("col", "align_up(colElems, 128) * 4", "colBuf"),
            "mask": Pool("mask", "floor_div(align_up(tileElems, 256), 8)", "maskBuf"),
            "bc": Pool("bc", "rowElems * 32", "bcBuf"),  # a tile's row values, one 32 B block each (Brcb)
            "blk": Pool("blk", "align_up(stepRows * tileLen, 128) * 4", "blkBuf"),  # slabs(block_max=True) steps
        }
        self.queues: dict[str, Buffer] = {}
        self.roles: dict[str, str] = {}
        self.red = Buffer("redBuf", "red", "64")
        self.work = Buffer("workBuf", "work", "workElems * 4 + 256")
        self.scl = Buffer("sclBuf", "scl", "256")
        self.grid = Buffer("gridBuf", "grid", "align_up(blockDim * 8, 64) * 4")
        self.uses_red = False  # total_*: a scalar result buffer and the work buffer
        self.uses_work = False  # row reductions: the work buffer
        self.hoisted: dict[str, str] = {}  # per-row value -> its per-tile array of scalars
        self.row_blocks: dict[tuple[str, bool], tuple[str, Buffer]] = {}  # (row value, reciprocal) -> Brcb blocks
        tile = self.loop.tile if self.loop else 1
        self.max_rows = max(self.p.tunable(tile).domain.values()) if isinstance(tile, str) else int(tile)
        self.uses_scl = False
        self.grid_loops = 0
        self.split_accs = 0
        self.host_scalars: list[tuple[str, ir.Expr]] = []
        self.host_names: dict[int, str] = {}
        self.slices: list[tuple[str, str, str, ir.Expr]] = []
        self.row_windows: list[tuple[tuple[str, ...], str, tuple[ir.Expr, ...]]] = []
        self.counter = 0
        self.depth = self.loop.depth
        self.held: dict[str, Val] = {}  # slabs(hold=True): each steps-loaded tensor's block of the tile

    def _reset_loop_state(self, loop: ir.Loop) -> None:
        self.loop = loop
        self.live_defs: dict[int, Val] = {}
        self.buf_users: dict[str, int] = {}
        self.last_use: dict[int, int] = {}
        self.def_of: dict[int, int] = {}  # id(Var node) -> def id
        self.pos_of_stmt: dict[int, int] = {}
        self.loop_end: dict[int, int] = {}
        self.grid_parts: list[tuple[str, str]] = []  # (name, op) of this loop's total_* values
        self.holding: ir.InnerLoop | None = None  # the chunks(hold=H) loop being lowered
        self.hold_new: dict[str, Buffer] = {}  # what it keeps, once it is lowered
        self.held_chunks: dict[str, Buffer] = {}  # tensor -> the UB buffer its first H chunks are kept in
        self.behind: Behind | None = None  # the chunks loop store whose copy-out trails the next loads

    # ------------------------------------------------------------ liveness
    def _liveness(self) -> None:
        """Number statements; resolve each Var to its definition; find each def's last use.
        A use inside an inner loop of a value defined outside it lasts until the loop's end."""
        pos = 0
        next_def = 0

        def visit(stmts, scope: dict[str, int], loop_stack: list[tuple[ir.InnerLoop, int, dict]]):
            nonlocal pos, next_def
            for s in stmts:
                if isinstance(s, ir.InnerLoop):
                    start = pos
                    child = dict(scope)
                    loop_stack.append((s, start, scope))
                    visit(s.body, child, loop_stack)
                    loop_stack.pop()
                    self.loop_end[id(s)] = pos
                    pos += 1
                    for name in scope:
                        scope[name] = child[name]
                    # uses inside the loop of outer defs: extend to the loop end
                    continue
                p = pos
                self.pos_of_stmt[id(s)] = p
                pos += 1
                for e in ir.stmt_exprs(s):
                    for sub in ir.walk_exprs(e):
                        if isinstance(sub, ir.Var):
                            d = scope[sub.name]
                            if d < 0:  # a top-level scalar: nothing to keep alive
                                continue
                            self.def_of[id(sub)] = d
                            use = p
                            for lp, lstart, _ in loop_stack:
                                if self.def_pos[d] < lstart:
                                    self.pending.append((d, lp))
                            self.last_use[d] = max(self.last_use.get(d, -1), use)
                if isinstance(s, ir.Assign):
                    d = next_def
                    next_def += 1
                    self.def_pos[d] = p
                    self.last_use.setdefault(d, p)
                    # a loop-carried update shares the buffer of the outer def
                    if loop_stack and s.target in loop_stack[-1][2]:
                        self.carried[d] = scope[s.target]
                    scope[s.target] = d
                    self.def_id[id(s)] = d

        self.def_pos: dict[int, int] = {}
        self.def_id: dict[int, int] = {}
        self.carried: dict[int, int] = {}
        self.pending: list[tuple[int, ir.InnerLoop]] = []
        visit(self.loop.body, {n: -1 - i for i, n in enumerate(self.top_names)}, [])
        for d, lp in self.pending:
            self.last_use[d] = max(self.last_use[d], self.loop_end[id(lp)])
        # an accumulator's outer def lives as long as any of its updates
        for d, outer in self.carried.items():
            root = outer
            while root in self.carried:
                root = self.carried[root]
            self.last_use[root] = max(self.last_use[root], self.last_use[d])
        self.free_at: dict[int, list[int]] = {}
        for d, p in self.last_use.items():
            self.free_at.setdefault(p, []).append(d)

    # ------------------------------------------------------------ driver
    def run(self) -> KernelPlan:
        self.top_names: list[str] = []
        for item in (self.loop,) if self.after_cube else self.p.top or (self.p.loop,):
            if isinstance(item, ir.Loop):
                self._reset_loop_state(item)
                self._liveness()
                self._loop(item)
                self.top_names += [s.target for s in ir.walk_stmts(item.body)
                                   if isinstance(s, ir.Assign) and isinstance(s.value, ir.GridReduce)]
            elif isinstance(item, ir.Assign):
                self.top_names.append(item.target)
                if self.tp.type_of(item.value).space == "H":
                    self.host_scalars.append((mangle("h", item.target), item.value))
                else:
                    self.emit(f"// DSL line {item.loc.line}: {self._src(item)}")
                    self.emit(f"const float {mangle('s', item.target)} = {self._scalar_cpp(item.value)};")
            elif isinstance(item, ir.Store):
                self._scalar_store(item)
        buffers = list(self.queues.values())
        for pool in self.pools.values():
            buffers += pool.buffers
        if self.uses_red:
            buffers.append(self.red)
        if self.uses_red or self.uses_work:
            buffers.append(self.work)
        if self.uses_scl:
            buffers.append(self.scl)
        if self.grid_loops:
            buffers.append(self.grid)
        buffers += self.extra_buffers
        if self.scratch:
            expr = self.scratch[0]
            for more in self.scratch[1:]:
                expr = f"max({expr}, {more})"
            buffers.append(Buffer("scratchBuf", "table", expr))
        return KernelPlan(self.init_lines + self.lines, buffers, self.roles, self.host_scalars, self.grid_loops,
                          self.split_accs, self.slices, self.row_windows)

    def _src(self, s) -> str:
        return self.p.line_text(s.loc.line)

    def _loop(self, loop: ir.Loop) -> None:
        grids = [s for s in ir.walk_stmts(loop.body)
                 if isinstance(s, ir.Assign) and isinstance(s.value, ir.GridReduce)]
        for g in grids:
            self.emit(f"float {mangle('p', g.target)} = {GRID_INIT[g.value.op]};  // this core's part of total_{g.value.op}")
        if grids:
            self._grid_acc_init(grids)
        if loop.split is not None:
            self._split_loop(loop)
            return
        self.emit("{")
        self.indent += 1
        granule = 16 * self.unit if loop.kind == "tiles" else self.unit  # see tiling.formulas
        header = loop_header(loop.kind, self.tp.chunked or self.after_cube, granule, stride=not self.after_cube)
        if blocked(loop):
            header = header[:-1] + blocked_slab_tile(self.unit, loop.block_max, loop.hold)
        for line in header:
            self.emit(line)
        self.indent += 1
        self.bound: Val | None = None
        if loop.inplace:
            self._check_inplace(loop)
        self.held = self._hold_loads(loop) if loop.hold else {}
        self._block(loop.body, loop.var)
        for v in self.held.values():  # the held blocks are read by every steps loop: freed after the last
            self.buf_users[self._key(v)] -= 1
            self._release(v)
        self.held = {}
        self.indent -= 1
        if loop.kind == "windows":
            self.emit("    }  // output column chunks")
            self.emit("}  // units")
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        if grids:
            self._grid_acc_read(grids)
            self._grid_combine(grids)

    def _grid_acc_init(self, grids) -> None:
        """A core's partials of a loop's total_* values stay in UB (one 32 B slot each), folded
        by one vector op a tile; they are read into scalars once, after the loop."""
        name = f"gaccBuf{self.grid_loops}"
        self.extra_buffers.append(Buffer(name, "gacc", str(32 * len(grids))))
        self.emit(f"LocalTensor<float> gacc{self.grid_loops} = {name}.Get<float>();")
        self.grid_acc = {}
        for i, g in enumerate(grids):
            self.grid_acc[g.target] = f"gacc{self.grid_loops}[{8 * i}]"
            self.emit(f"Duplicate(gacc{self.grid_loops}[{8 * i}], static_cast<float>({GRID_INIT[g.value.op]}), 8);")

    def _grid_acc_read(self, grids) -> None:
        self.emit("SyncVS();")
        for i, g in enumerate(grids):
            self.emit(f"{mangle('p', g.target)} = gacc{self.grid_loops}.GetValue({8 * i});")

    def _grid_combine(self, grids) -> None:
        """Every core writes its partials to its 32 B slot of the GM workspace; after SyncAll
        every core reads all slots and combines them in the same order (deterministic)."""
        k = self.grid_loops
        self.grid_loops += 1
        for g in grids:
            self.emit(f"float {mangle('s', g.target)} = {GRID_INIT[g.value.op]};")
        self.emit("{  // combine the per-core partials of total_* across all cores")
        self.indent += 1
        self.emit("LocalTensor<float> gl = gridBuf.Get<float>();")
        for i, g in enumerate(grids):
            self.emit(f"gl.SetValue({i}, {mangle('p', g.target)});")
        self.emit("SetFlag<HardEvent::S_MTE3>(0);")
        self.emit("WaitFlag<HardEvent::S_MTE3>(0);")
        self.emit(f"DataCopy(gridGm[({k} * td_.blockDim + core) * 8], gl, 8);")
        self.emit("PipeBarrier<PIPE_ALL>();")
        self.emit("SyncAll();")
        self.emit(f"DataCopy(gl, gridGm[{k} * td_.blockDim * 8], static_cast<uint32_t>(td_.blockDim * 8));")
        self.emit("SetFlag<HardEvent::MTE2_S>(0);")
        self.emit("WaitFlag<HardEvent::MTE2_S>(0);")
        self.emit("for (int64_t b = 0; b < td_.blockDim; ++b) {")
        for i, g in enumerate(grids):
            v = f"gl.GetValue(b * 8 + {i})"
            cur = mangle("s", g.target)
            expr = {"sum": f"{cur} + {v}", "max": f"acx_fmax({cur}, {v})",
                    "min": f"acx_fmin({cur}, {v})"}[g.value.op]
            self.emit(f"    {cur} = {expr};")
        self.emit("}")
        self.emit("SetFlag<HardEvent::S_MTE2>(0);")
        self.emit("WaitFlag<HardEvent::S_MTE2>(0);")
        self.indent -= 1
        self.emit("}")

    def _scalar_store(self, s: ir.Store) -> None:
        out = self.p.param(s.tensor)
        self.roles[s.tensor] = "scalar_out"
        self.uses_scl = True
        t = CTYPE[out.dtype]
        self.emit(f"// DSL line {s.loc.line}: {self._src(s)}")
        self.emit("if (core == 0) {")
        if out.dtype == "bf16":  # no scalar conversion to bf16: an fp32 lane, then one vector Cast
            self.emit("    LocalTensor<float> sf = sclBuf.Get<float>();")
            self.emit(f"    Duplicate(sf, static_cast<float>({self._scalar_cpp(s.value)}), 8);")
            self.emit(f"    LocalTensor<{t}> so = sclBuf.Get<{t}>()[32];  // the buffer's second 64 B")
            self.emit("    PipeBarrier<PIPE_V>();")
            self.emit("    Cast(so, sf, RoundMode::CAST_RINT, 8);")
        else:
            self.emit(f"    LocalTensor<{t}> so = sclBuf.Get<{t}>();")
            self.emit(f"    Duplicate(so, static_cast<{t}>({self._scalar_cpp(s.value)}), {32 // NBYTES[out.dtype]});")
        self.emit("    SetFlag<HardEvent::V_MTE3>(0);")
        self.emit("    WaitFlag<HardEvent::V_MTE3>(0);")
        self.emit(f"    CopyRowsOut({mangle('gm', s.tensor)}[0], so, 1, 1, 1, {32 // NBYTES[out.dtype]});")
        self.emit("}")

    # ------------------------------------------------------------ scalars
    def _host_name(self, e: ir.Expr) -> str:
        """A host-computable scalar expression becomes a field of the tiling struct."""
        if isinstance(e, ir.Var):
            return f"td_.{mangle('h', e.name)}"
        if isinstance(e, ir.ScalarRef):
            return f"td_.{mangle('sc', e.name)}"
        key = id(e)
        if key not in self.host_names:
            name = f"hs{len(self.host_names)}"
            self.host_names[key] = name
            self.host_scalars.append((name, e))
        return f"td_.{self.host_names[key]}"

    def _scalar_cpp(self, e: ir.Expr) -> str:
        """A C++ float expression for a scalar: constants inline, host scalars from the tiling,
        kernel scalars (total_* results) as locals, unary functions via an 8-lane vector op."""
        t = self.tp.type_of(e)
        if isinstance(e, ir.Const):
            return cconst(e.value)
        if (t.space or "H") == "H" and (not self.after_cube or any(isinstance(x, ir.Numel) for x in ir.walk_exprs(e))):
            return self._host_name(e)  # after a cube stage only what needs the tensors' sizes (cube_tiling host)
        if isinstance(e, ir.ScalarRef):  # after a cube stage: inline (its tiling's host scalars need sizes)
            return f"td_.{mangle('sc', e.name)}"
        if isinstance(e, ir.Var):
            return mangle("s", e.name)
        if isinstance(e, ir.Extent):
            if self.after_cube:
                return "static_cast<float>(td_.vW)"
            return "static_cast<float>(td_.A * td_.W)" if self.loop.kind == "rows" else "static_cast<float>(td_.K)"
        if isinstance(e, ir.Position):  # the step of a slabs steps loop
            if blocked(self.loop):
                raise DslError("position(k) is one step; slabs(rows=...) copies several: drop rows=", e.loc)
            return "static_cast<float>(k)"
        if isinstance(e, ir.StepLoad):  # v[k] of a slabs steps loop, a scalar GM read a step
            gm = self._step_values(e, "k + 1")
            return f"static_cast<float>({gm}.GetValue(k))"
        if isinstance(e, ir.ScalarLoad):  # element 0 of a one-element input, a scalar GM read
            self.roles[e.tensor] = "scalar_in"
            return f"static_cast<float>({mangle('gm', e.tensor)}.GetValue(0))"
        if isinstance(e, ir.Binary):
            a, b = self._scalar_cpp(e.lhs), self._scalar_cpp(e.rhs)
            if e.op in ("max", "min"):
                return f"acx_f{e.op}({a}, {b})"
            return f"({a} {ops.BINARY[e.op].infix} {b})"
        if isinstance(e, ir.Power):  # the base once, in a local: nested powers stay linear
            self.counter += 1
            b = f"pw{self.counter}"
            self.emit(f"const float {b} = {self._scalar_cpp(e.base)};")
            return "(" + " * ".join([b] * e.n) + ")"
        if isinstance(e, ir.Unary):
            a = self._scalar_cpp(e.arg)
            if e.op == "neg":
                return f"(-{a})"
            self.uses_scl = True
            return f"AcxScalarFn(sclBuf.Get<float>(), {a}, {SCALAR_FN[e.op]})"
        raise DslError(f"cannot compute {type(e).__name__} as a kernel scalar", e.loc)

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def _block(self, stmts, loop_var: str) -> None:
        for s in stmts:
            src = self._src(s)
            if isinstance(s, ir.InnerLoop):
                self.emit(f"// DSL line {s.loc.line}: {src}")
                self._inner_loop(s)
                self._free_after(self.loop_end[id(s)])
                continue
            self.emit(f"// DSL line {s.loc.line}: {src}")
            self.cur_stmt = s
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.GridReduce):
                self._grid_part(s)
            elif isinstance(s, ir.Assign):
                d = self.def_id[id(s)]
                hint = None
                if d in self.carried:
                    hint = self.live_defs[self.carried[d]]
                v = self._expr(s.value, loop_var, hint)
                if hint is not None and v.buf is not hint.buf:
                    self._copy(hint, v)
                    self._release(v)
                    v = hint
                if v.form == "scalar":
                    raise DslError("a plain scalar cannot be assigned", s.loc)
                v = Val(v.form, v.dtype, v.cpp, v.buf, temp=False, origin=v.origin, size=v.size)
                self._bind(d, v)
            elif isinstance(s, ir.Store):
                self._store(s, loop_var)
            self._free_after(self.pos_of_stmt[id(s)])

    def _grid_part(self, s: ir.Assign) -> None:
        """Fold this tile's contribution into the core's partial of a total_* value."""
        g = s.value
        v = self._expr(g.arg, self.loop.var)
        self.uses_red = True
        self.counter += 1
        red, work = f"red{self.counter}", f"work{self.counter}"
        n = "r" if v.form == "row" else "cnt"
        self.emit(f"LocalTensor<float> {red} = redBuf.Get<float>();")
        self.emit(f"LocalTensor<float> {work} = workBuf.Get<float>();")
        extra = ", false" if g.op != "sum" else ""
        self.emit(f"{REDUCE[g.op]}<float>({red}, {v.cpp}, {work}, static_cast<int32_t>({n}){extra});")
        acc = self.grid_acc[s.target]
        fold = {"sum": "Add", "max": "Max", "min": "Min"}[g.op]
        self.emit(f"{fold}({acc}, {acc}, {red}, 1);  // folded on the vector pipe: no scalar round trip a tile")
        if v.temp:
            self._release(v)

    @staticmethod
    def _key(v: Val) -> str:
        """Queue tensors are tracked one by one; pool buffers by the buffer."""
        return f"{v.buf.name}:{v.origin or v.cpp}" if v.buf.kind in ("inq", "bindq", "heldq") else v.buf.name

    def _bind(self, d: int, v: Val) -> None:
        self.live_defs[d] = v
        if v.buf is not None:
            self.buf_users[self._key(v)] = self.buf_users.get(self._key(v), 0) + 1

    def _free_after(self, pos: int) -> None:
        for d in self.free_at.get(pos, []):
            v = self.live_defs.pop(d, None)
            if v is None or v.buf is None:
                continue
            self.buf_users[self._key(v)] -= 1
            if self.buf_users[self._key(v)] == 0:
                self._release(Val(v.form, v.dtype, v.cpp, v.buf, temp=True, origin=v.origin))

    def _release(self, v: Val) -> None:
        """Give a dead value's buffer back (FreeTensor for queue buffers)."""
        if v.buf is None or self.buf_users.get(self._key(v), 0) > 0:
            return
        if v.buf.kind == "inq":
            self.emit(f"{v.buf.name}.FreeTensor({v.origin or v.cpp});")
        elif v.buf.kind == "heldq":  # a chunk read from the hold buffer is not the queue's
            self.emit(f"if (!{v.buf.kept}) {v.buf.name}.FreeTensor({v.origin or v.cpp});")
        elif v.buf.kind == "bindq":  # a bound slot is freed by the store that copies it out
            return
        elif v.buf.kind in self.pools:
            self.pools[v.buf.kind].put(v.buf)

    # ------------------------------------------------------------ loops / memory
    def _inner_loop(self, s: ir.InnerLoop) -> None:
        outer_hoisted, outer_blocks = self.hoisted, self.row_blocks
        if s.kind == "chunks":
            self._hoist_row_scalars(s)
            if self.after_cube:
                if s.reverse or s.hold is not None:
                    raise DslError("chunks(t, SIZE, reverse=True / hold=H) is not offered after a cube stage", s.loc)
                self._stage_chunks(s)
                self.hoisted = outer_hoisted
                self._drop_row_blocks(outer_blocks)
                return
            if s.hold is not None:
                if self.loop.axis >= 0 or self.loop.flat or self.loop.kind != "rows":
                    raise DslError("chunks(t, SIZE, hold=H) keeps chunks of whole rows: not in a rows loop "
                                   "with axis= or flat=True", s.loc)
                self.holding = s
            if self.loop.axis >= 0:  # strided rows: A segments of W elements each
                self.emit("for (int64_t a = 0; a < td_.A; ++a) {")
                self.indent += 1
            self.behind = self._plan_behind(s)
            if s.reverse:  # the last (possibly short) chunk first
                self.emit("for (int64_t c0 = td_.W > 0 ? (td_.W - 1) / td_.chunk * td_.chunk : -1; c0 >= 0; "
                          "c0 -= td_.chunk) {")
            else:
                self.emit("for (int64_t c0 = 0; c0 < td_.W; c0 += td_.chunk) {")
            self.indent += 1
            self.emit("const int64_t w = acx_min(td_.chunk, td_.W - c0);")
            self.emit("const int64_t cnt = r * wp;")
        elif s.kind == "taps":
            self._taps_loop(s)
            return
        elif blocked(self.loop) and self.loop.block_max:
            self._blockmax_steps(s)
            self.hoisted = outer_hoisted
            self._drop_row_blocks(outer_blocks)
            return
        elif blocked(self.loop):
            folds = step_folds(s, self.def_id, self.carried)
            self.emit(f"for (int64_t k0 = {self.k_lo}; k0 < {self.k_hi}; k0 += td_.stepRows) {{  // stepRows steps a copy")
            self.indent += 1
            self.emit(f"const int64_t kb = acx_min(td_.stepRows, {self.k_hi} - k0);")
            self.emit("const int64_t cnt = kb * cntp;  // rows k0 .. k0 + kb of the accumulators")
        else:
            self.emit("for (int64_t k = td_.K - 1; k >= 0; --k) {" if s.reverse else "for (int64_t k = 0; k < td_.K; ++k) {")
            self.indent += 1
        self._block(s.body, s.var)
        self.indent -= 1
        self.emit("}")
        if self.behind is not None:
            self._close_behind()
        if s.kind == "steps" and blocked(self.loop):
            self._fold_step_rows(s, folds)
        if s.kind == "chunks" and self.loop.axis >= 0:
            self.indent -= 1
            self.emit("}")
        if self.holding is s:  # what it kept serves the later chunks loops of the tile
            self.holding = None
            self.held_chunks.update(self.hold_new)
            self.hold_new = {}
        self.hoisted = outer_hoisted
        self._drop_row_blocks(outer_blocks)

    def _acc_val(self, d: int) -> Val:
        """An accumulator update's value after its loop: its own def while live, else the outer
        def whose buffer every loop-carried update shares."""
        if d in self.live_defs:
            return self.live_defs[d]
        while d in self.carried:
            d = self.carried[d]
        return self.live_defs[d]

    def _fold_step_rows(self, s: ir.InnerLoop, folds: list[tuple[int, str, str]]) -> None:
        """After a blocked steps loop: each accumulator's stepRows partial rows folded into
        every row. A rescaled sum (partial row j relative to its own max m_j) is first scaled
        by exp(m_j - M) to the folded max M: the online log-sum-exp's merge."""
        by_name = {st.target: self.def_id[id(st)] for st in s.body if isinstance(st, ir.Assign)}
        saved = {}
        for _, _, rel in folds:
            if rel and rel not in saved:
                m = self._acc_val(by_name[rel])
                saved[rel] = self._new("tile", "f32")
                self.emit(f"Muls({saved[rel].cpp}, {m.cpp}, 1.0f, cnt);  // the partial maxima m_j")
        for d, op, rel in folds:
            if not rel:
                self.emit(f"AcxFoldRows<{FOLD_OP[op]}>({self._acc_val(d).cpp}, td_.stepRows, cntp);")
        for d, op, rel in folds:
            if rel and op.startswith("arg"):  # the first index among the rows holding the folded extreme
                mj, big, acc = saved[rel].cpp, self._acc_val(by_name[rel]).cpp, self._acc_val(d).cpp
                mask, mk = self._mask()
                full = "acx_align_up(cnt, 64)"
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Compare({mk}, {mj}, {big}, CMPMODE::EQ, {full});")
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Select({acc}, {mk}, {acc}, ACX_INF, SELMODE::VSEL_TENSOR_SCALAR_MODE, {full});")
                self.emit(f"AcxFoldRows<ACX_MIN>({acc}, td_.stepRows, cntp);")
                self.pools["mask"].put(mask)
            elif rel:
                mj, big, acc = saved[rel].cpp, self._acc_val(by_name[rel]).cpp, self._acc_val(d).cpp
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Sub({mj}, {mj}, {big}, cnt);")
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Exp({mj}, {mj}, cnt);")
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Mul({acc}, {acc}, {mj}, cnt);")
                self.emit(f"AcxFoldRows<ACX_ADD>({acc}, td_.stepRows, cntp);")
        for v in saved.values():
            self.pools["tmp"].put(v.buf)

    def _hoist_row_scalars(self, s: ir.InnerLoop) -> None:
        """Per-row values defined before a chunks loop (and not updated in it) that combine with
        its tiles are put in 32 B blocks once per rows tile (Brcb, see ``_hoist_row_blocks``);
        those the vector path cannot apply are read into arrays of scalars once per rows tile —
        one V->S sync — instead of once in every chunk."""
        changed = {x.target for x in ir.walk_stmts(s.body) if isinstance(x, ir.Assign)}
        found: list[str] = []
        blocks: list[tuple[Val, bool]] = []  # (row value, as its reciprocal)
        for e in ir.body_exprs(s.body):
            if not isinstance(e, ir.Binary):
                continue
            row = e.lhs if self.tp.type_of(e.lhs).form == "row" else e.rhs
            base = row.arg if isinstance(row, ir.Index) else row
            if {self.tp.type_of(e.lhs).form, self.tp.type_of(e.rhs).form} != {"tile", "row"} \
                    or not isinstance(base, ir.Var) or base.name in changed:
                continue
            rv = self._expr(row, s.var)
            tile = e.rhs if row is e.lhs else e.lhs
            if self._applies_on_vector(e.op, self.tp.type_of(tile).dtype, rv):
                recip = e.op == "div" and row is e.rhs
                if all((v.cpp, k) != (rv.cpp, recip) for v, k in blocks):
                    blocks.append((rv, recip))
            elif rv.cpp not in found and rv.cpp not in self.hoisted:
                found.append(rv.cpp)
        # Blocks cost a 2-cycle two-input op a repeat where Adds/Muls cost 1, the scalar read one
        # sync a rows tile: the tiling picks blocks when a row has few chunks (ROW_BLOCKS_CHUNKS).
        only_scalar = bool(found)
        if self.after_cube:  # the cube tiling has no rowBlocks field: scalars
            found += [rv.cpp for rv, _ in blocks if rv.cpp not in found and rv.cpp not in self.hoisted]
            blocks = []
        found += [rv.cpp for rv, _ in blocks if rv.cpp not in found and rv.cpp not in self.hoisted]
        self._hoist_row_blocks(blocks, "td_.rowBlocks")
        if not found:
            return
        self.hoisted = dict(self.hoisted)
        for ref in found:
            self.counter += 1
            self.hoisted[ref] = f"rs{self.counter}"
            self.emit(f"float rs{self.counter}[{self.max_rows}];  // one value per row, read once per tile")
        self.emit("{" if only_scalar or not blocks else "if (!td_.rowBlocks) {")
        self.emit("    SyncVS();")
        self.emit("    for (int64_t ri = 0; ri < r; ++ri) {")
        for ref in found:
            self.emit(f"        {self.hoisted[ref]}[ri] = static_cast<float>({ref}.GetValue(ri));")
        self.emit("    }")
        self.emit("}")

    def _row_off(self) -> str:
        """GM element offset of the current rows tile (or column chunk)."""
        if self.loop.axis >= 0:
            return "(a * td_.N + gr) * td_.W + c0"
        return "gr * td_.W + c0"

    def _queue(self, tensor: str, kind: str, form: str) -> Buffer:
        q = self.queues.get(tensor)
        if q is None:
            dtype = self.p.param(tensor).dtype
            elems = {"tile": "align_up(tileElems, 128)", "col": "align_up(colElems, 128)",
                     "stage": "align_up(stageElems, 128)", "flat": "align_up(flatElems, 128)",
                     "row": "rowElems"}[form]
            q = Buffer(mangle(kind, tensor), kind, f"{elems} * {NBYTES[dtype]}",
                       slots=0, tensor=tensor, dtype=dtype, form=form)
            self.queues[tensor] = q
        elif q.form != form:
            raise DslError(f"'{tensor}' is accessed both as a {q.form} and as a {form}")
        return q

    def _gm_offset(self, tensor: str, at: str, mode: str) -> str:
        loop = self.loop
        if loop.kind == "tiles":
            self.roles[tensor] = "tile"
            return "g"
        if loop.kind == "rows":
            if mode == "bcast":
                self.roles[tensor] = "bcast"
                return "c0"
            if mode == "per_row":
                self.roles[tensor] = "per_row"
                return "gr"
            self.roles[tensor] = "tile"
            return self._row_off()
        if at == loop.var:
            self.roles[tensor] = "outer"
            return "a * td_.B + b0"
        self.roles[tensor] = "step"
        if blocked(loop):
            return "(a * td_.K + k0) * td_.B + b0"
        return "(a * td_.K + k) * td_.B + b0"

    def _hold_loads(self, loop: ir.Loop) -> dict[str, Val]:
        """``slabs(hold=True)``: every tensor a steps loop loads is copied once a tile, all K steps
        in one strided copy, into a queue slot kept until the tile's end; every steps loop reads
        that block (``_load``), so x crosses GM once however many passes the body makes."""
        steps = {s.var for s in ir.walk_stmts(loop.body) if isinstance(s, ir.InnerLoop) and s.kind == "steps"}
        out: dict[str, Val] = {}
        for e in ir.body_exprs(loop.body):
            if isinstance(e, ir.Load) and e.at in steps and e.mode == "tile" and e.tensor not in out:
                dtype = self.p.param(e.tensor).dtype
                q = self._queue(e.tensor, "inq", "tile")
                self.counter += 1
                name, t = mangle(f"hold{self.counter}", e.tensor), CTYPE[dtype]
                self.roles[e.tensor] = "step"
                self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
                self.emit(f"CopyRowsIn({name}, {mangle('gm', e.tensor)}[a * td_.K * td_.B + b0], td_.K, bcnt, "
                          "td_.B, cntp);  // every step of the tile in one copy, kept for every steps loop")
                self.emit(f"{q.name}.EnQue({name});")
                self.emit(f"{name} = {q.name}.DeQue<{t}>();")
                out[e.tensor] = Val("tile", dtype, name, q, temp=False)
                # the tile is one more user of the slot, so no value that dies in a steps loop frees it
                self.buf_users[self._key(out[e.tensor])] = 1
        return out

    def _load(self, e: ir.Load) -> Val:
        v = self._load_value(e)
        self._loaded_behind(e)
        return v

    def _load_value(self, e: ir.Load) -> Val:
        if self.after_cube:
            return self._stage_load(e)
        if e.tensor in self.held and e.at != self.loop.var:
            return self.held[e.tensor]
        dtype = self.p.param(e.tensor).dtype
        if self.loop.kind == "windows":  # one tap: gather from the staged rows
            st, offs, gdt, row = self.tap  # gdt: the staged values' dtype (an fp32 fold of 16-bit rows)
            d = self._new("tile", gdt)
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
            self.emit(f"    Gather({d.cpp}[ri * wp], {st}[{row} * td_.stW], {offs}.ReinterpretCast<uint32_t>(), 0u, "
                      "static_cast<uint32_t>(w));")
            self.emit("}")
            return d
        if e.mode == "bcast" and self.loop.kind == "rows" and self.loop.axis < 0 and not self.tp.chunked:
            return self._resident_bcast(e, dtype)
        if self.loop.flat and e.mode == "tile" and (self.loop.kind == "rows" or e.at != self.loop.var):
            return self._flat_load(e, dtype)
        form = {"tile": "tile", "bcast": "col", "per_row": "row"}[e.mode]
        if self.loop.inplace and e.mode == "tile" and e.tensor == self.loop.tensor:
            return self._bound_load(e, dtype)
        q = self._queue(e.tensor, "inq", form)
        chunk_tile = self.loop.kind == "rows" and e.mode == "tile" and e.at != self.loop.var
        if chunk_tile and e.tensor in self.held_chunks:
            return self._held_chunk(e, dtype, q)
        self.counter += 1
        name = mangle(f"ld{self.counter}", e.tensor)
        t = CTYPE[dtype]
        off = self._gm_offset(e.tensor, e.at, e.mode)
        gm = f"{mangle('gm', e.tensor)}[{off}]"
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
        if chunk_tile and self.holding is not None:
            self._copy_in(q, name, t, f"CopyRowsIn({name}, {gm}, r, w, td_.W, wp);", declare=False, alloc=False)
            self._keep_chunk(e.tensor, dtype, name)
            return Val(form, dtype, name, q, temp=True)
        if self.loop.kind == "rows" and e.mode == "tile":
            self.emit(f"CopyRowsIn({name}, {gm}, r, w, td_.W, wp);")
        elif e.mode == "bcast":
            self.emit(f"CopyRowsIn({name}, {gm}, 1, w, td_.W, wp);")
        elif e.mode == "per_row":
            self.emit(f"CopyRowsIn({name}, {gm}, 1, r, r, td_.rowElems);")
        elif blocked(self.loop) and self.roles.get(e.tensor) == "step":
            self.emit(f"CopyRowsIn({name}, {gm}, kb, bcnt, td_.B, cntp);  // kb steps in one copy")
        elif blocked(self.loop):
            self.emit(f"CopyRowsIn({name}, {gm}, 1, bcnt, bcnt, bcnt);")
        else:
            self.emit(f"CopyRowsIn({name}, {gm}, 1, cnt, cnt, cnt);")
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")
        if blocked(self.loop) and not self.loop.block_max and self.roles.get(e.tensor) == "outer":  # as tall as the steps' rows
            if dtype not in ("f32", "f16", "i32"):
                raise DslError(f"slabs(rows=...): '{e.tensor}' ({dtype}) is loaded at the slab; rows= "
                               "repeats such loads with Muls (f32, f16, i32 only): drop rows=", e.loc)
            self.emit(f"AcxRepeatRows({name}, td_.stepRows, cntp);")
        return Val(form, dtype, name, q, temp=True)

    def _copy_in(self, q: Buffer, name: str, t: str, copy: str, declare: bool = True, alloc: bool = True) -> None:
        """A GM copy into a slot of input queue ``q``: AllocTensor, the ``copy`` line, EnQue and
        DeQue (the vector side then waits for the copy)."""
        if alloc:
            self.emit(f"{f'LocalTensor<{t}> ' if declare else ''}{name} = {q.name}.AllocTensor<{t}>();")
        self.emit(copy)
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")

    def _hold_buffer(self, tensor: str, dtype: str) -> Buffer:
        """The UB buffer a ``chunks(hold=H)`` loop keeps ``tensor``'s first H chunks of a row tile in."""
        key = f"held:{tensor}"
        buf = self.queues.get(key)
        if buf is None:
            buf = Buffer(mangle("held", tensor), "res", f"holdChunks * align_up(tileElems, 128) * {NBYTES[dtype]} + 32",
                         tensor=tensor, dtype=dtype, form="tile")
            self.queues[key] = buf
        return buf

    def _keep_chunk(self, tensor: str, dtype: str, name: str) -> None:
        """In a ``chunks(hold=H)`` loop: a chunk among the first H of the row tile is copied (UB to
        UB, on the vector pipe, before anything reads it) into its slot of the hold buffer."""
        buf = self._hold_buffer(tensor, dtype)
        t = CTYPE[dtype]
        self.emit("if (c0 < td_.holdChunks * td_.chunk) {  // kept for the later passes over this row tile")
        self.emit(f"    DataCopy({buf.name}.Get<{t}>()[(c0 / td_.chunk) * acx_align_up(td_.tileElems, 128)], {name}, "
                  f"static_cast<uint32_t>(acx_align_up(cnt, {32 // NBYTES[dtype]})));")
        self.emit("}")
        self.hold_new[tensor] = buf

    def _held_chunk(self, e: ir.Load, dtype: str, q: Buffer) -> Val:
        """``load(x, c)`` after a ``chunks(hold=H)`` loop that kept x: the first H chunks are read
        from the hold buffer (no GM copy), the others as usual. The value is freed (FreeTensor)
        only where it was copied; it is never written over (the kept chunks serve every later pass)."""
        buf = self.held_chunks[e.tensor]
        self.counter += 1
        name, flag = mangle(f"ld{self.counter}", e.tensor), f"kept{self.counter}"
        t = CTYPE[dtype]
        gm = f"{mangle('gm', e.tensor)}[{self._gm_offset(e.tensor, e.at, e.mode)}]"
        self.emit(f"const bool {flag} = c0 < td_.holdChunks * td_.chunk;")
        self.emit(f"LocalTensor<{t}> {name};")
        self.emit(f"if ({flag}) {{  // kept by the first pass: no copy")
        self.emit(f"    {name} = {buf.name}.Get<{t}>()[(c0 / td_.chunk) * acx_align_up(td_.tileElems, 128)];")
        self.emit("} else {")
        self.indent += 1
        self._copy_in(q, name, t, f"CopyRowsIn({name}, {gm}, r, w, td_.W, wp);", declare=False)
        self.indent -= 1
        self.emit("}")
        return Val("tile", dtype, name, replace(q, kind="heldq", kept=flag), temp=True)

    def _store(self, s: ir.Store, loop_var: str) -> None:
        if self.after_cube:
            self._stage_store(s)
            return
        out = self.p.param(s.tensor)
        vt = self.tp.type_of(s.value)
        form = "row" if vt.form == "row" else "tile"
        if self.loop.inplace and form == "tile":
            self._bound_store(s, loop_var)
            return
        q = self._queue(s.tensor, "outq", form)
        t = CTYPE[out.dtype]
        self.counter += 1
        name = mangle(f"out{self.counter}", s.tensor)
        gm = mangle("gm", s.tensor)
        if isinstance(s.value, (ir.Var, ir.Load)):
            v = self._expr(s.value, loop_var)
            self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
            n = "r" if form == "row" else "cnt"
            self.emit(f"DataCopy({name}, {v.cpp}, acx_align_up({n}, {32 // NBYTES[out.dtype]}));")
            if v.temp:
                self._release(v)
        else:
            dst = Val(form, out.dtype, name, q, temp=False)
            self._expr(s.value, loop_var, dst, pre=lambda: self.emit(
                f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();"))
        if self.behind is not None and self.behind.store is s:
            self.roles[s.tensor] = "tile"
            self._enqueue_behind(name, t)
            return
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")
        if self.loop.kind == "rows" and form == "row":
            self.roles[s.tensor] = "row_out"
            self.emit(f"CopyRowsOut({gm}[gr], {name}, 1, r, r, td_.rowElems);")
        elif self.loop.kind == "rows":
            self.roles[s.tensor] = "tile"
            self.emit(f"CopyRowsOut({gm}[{self._row_off()}], {name}, r, w, td_.W, wp);")
        elif self.loop.kind == "windows":
            self.roles[s.tensor] = "window_out"
            self.emit(f"CopyRowsOut({gm}[gr * td_.OW + c0], {name}, r, w, td_.OW, wp);")
        else:
            off = self._gm_offset(s.tensor, s.at, "tile")
            if blocked(self.loop) and self.roles.get(s.tensor) == "step":  # kb steps in one copy
                self.emit(f"CopyRowsOut({gm}[{off}], {name}, kb, bcnt, td_.B, cntp);")
            elif blocked(self.loop):  # row 0 of the folded rows
                self.emit(f"CopyRowsOut({gm}[{off}], {name}, 1, bcnt, bcnt, bcnt);")
            else:
                self.emit(f"CopyRowsOut({gm}[{off}], {name}, 1, cnt, cnt, cnt);")
        self.emit(f"{q.name}.FreeTensor({name});")

    def _resident_bcast(self, e: ir.Load, dtype: str) -> Val:
        """``load_bcast`` in a rows loop of whole rows reads the same row for every tile: it is
        copied once per core (on the core's first tile) into a UB buffer of its own that stays
        resident, instead of once per tile through a queue. The value is never a destination
        (not a temporary), so no op writes over it."""
        key = f"res:{e.tensor}"
        buf = self.queues.get(key)
        if buf is None:
            buf = Buffer(mangle("res", e.tensor), "res", f"align_up(colElems, 128) * {NBYTES[dtype]}",
                         tensor=e.tensor, dtype=dtype, form="col")
            self.queues[key] = buf
        self.roles[e.tensor] = "bcast"
        t = CTYPE[dtype]
        self.counter += 1
        name = mangle(f"ld{self.counter}", e.tensor)
        self.emit(f"LocalTensor<{t}> {name} = {buf.name}.Get<{t}>();")
        self.emit("if (i == 0) {  // this core's first tile: the row stays resident for the rest")
        self.emit(f"    CopyRowsIn({name}, {mangle('gm', e.tensor)}[0], 1, w, td_.W, wp);")
        self.emit("    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);")
        self.emit("}")
        return Val("col", dtype, name, buf, temp=False)
