"""What the vector code generator supports of the one language, per kind of launch, checked
before anything is planned.

The language is one (``checker.py`` types every stage of every kernel) and so is its vector
code generator (``compute.py`` + ``compute_ops.py`` + ``compute_groups.py``), but the two
tilings it runs under cover different parts of it today:

- a ``@kernel`` (``tiling.py``: one chunk size per loop, no workspace, host scalars) has no
  groups of per-row values (``load_cols``/``load_group``/``load_members``, ``g[i]``,
  ``sinkhorn``) and no ``chunks(..., parts=P)``: its tiling has no per-group fields;
- the rows stage of a ``@cube_kernel`` (``cube_tiling.py``: a chunk size and row width per
  chunks loop, split-K workspaces) covers f32 math over column chunks and groups, comparisons
  and ``where`` (Compare / Select with a mask buffer of the pass, as in a ``@kernel``), without
  scans, gathers or grid reductions, on f16/bf16/f32 tensors (and bool masks the
  rows stage reads); numel / size of the kernel's tensors are host scalars of its tiling.

A program outside its launch's part gets a DslError naming the line and what to do.
"""

from __future__ import annotations

from .. import ir
from ..checker import TypedProgram
from ..parser import DslError

CUBE_TENSOR_DTYPES = ("f16", "bf16", "f32")
UNSUPPORTED = {
    ir.Scan: "scan_*()", ir.RowLast: "row_last()",
    ir.Pick: "pick()", ir.GridReduce: "total_*()",
    ir.LoadSlice: "load_slice()", ir.LoadPerRowEvery: "load_per_row(v, t, d)",
    ir.LoadEvery: "load_every(v, t, d)", ir.RowPosition: "row_position(t, d, n)",
    ir.LoadBcastEvery: "load_bcast_every(v, t, d)",
}
ARITH = (ir.Unary, ir.LeakyRelu, ir.Power, ir.Binary, ir.RowReduce, ir.Sinkhorn)


def check_l1_acc(p: ir.Program) -> None:
    """tile_m= / tile_n= (partial sums in L1) take the plain stage ring: the held-panel, bias, split
    Fixpipe and ring forms have their own uses of L0C and L1 that this one does not join."""
    c = p.cube
    assert c is not None
    if c.bias is not None:
        raise DslError("tile_m= / tile_n=: no accumulator bias with partial sums in L1", c.loc)
    for name in ("a_whole", "b_whole", "b_ahead", "b_hold", "fix_split", "fix_defer", "tail"):
        v = getattr(c, name)
        if isinstance(v, str) or int(v) > 0:
            raise DslError(f"tile_m= / tile_n= (partial sums in L1) take the plain stage ring: drop {name}=", c.loc)
    if any(w.ring for w in p.workspaces):
        raise DslError("tile_m= / tile_n=: not in the ring (mixed) form", c.loc)


def check_cube_supported(tp: TypedProgram) -> None:
    """Raise DslError for the first construct of a @cube_kernel the lowering cannot emit."""
    p = tp.program
    for prm in p.params:
        if prm.kind == "scalar" and prm.dtype != "f32":
            raise DslError("Scalar parameters of a cube kernel are f32", prm.loc)
        cube_operand = p.cube is not None and prm.name in (p.cube.a.tensor, p.cube.b.tensor, p.cube.target)
        if prm.kind != "scalar" and prm.dtype not in CUBE_TENSOR_DTYPES and (cube_operand or prm.dtype != "bool"):
            raise DslError(f"cube kernels take f16, bf16 or f32 tensors (bool masks in the rows stage), "
                           f"not {prm.dtype}", prm.loc)
    if p.cube is not None and p.cube.ordered_split:
        check_ordered_split(p)
    if p.cube is not None and p.cube.l1_acc:
        check_l1_acc(p)
    v = p.vector
    if v is None:
        return
    if v.groups != 1 or v.axis >= 0:
        raise DslError("rows(groups=..., axis=...) is not available in the rows stage of a @cube_kernel", v.loc)
    _block(tp, v, v.body, None)


def _block(tp: TypedProgram, v: ir.Loop, body, chunk: ir.InnerLoop | None) -> None:
    for s in body:
        if isinstance(s, ir.InnerLoop):
            if s.kind != "chunks":
                raise DslError(f"{s.kind}() is not available in the rows stage of a @cube_kernel", s.loc)
            _block(tp, v, s.body, s)
            continue
        for e in ir.walk_exprs(s.value):
            _expr(tp, e, chunk)
        if isinstance(s, ir.Store):
            form = tp.type_of(s.value).form
            if form == "tile" and (chunk is None or s.at != chunk.var):
                raise DslError("a tile is stored at the chunks variable: `for c in chunks(t, SIZE)`", s.loc)
            if form == "row" and chunk is not None:
                raise DslError("per-row values (groups) are stored at the rows variable, outside chunks loops",
                               s.loc)


def _expr(tp: TypedProgram, e: ir.Expr, chunk: ir.InnerLoop | None) -> None:
    for kind, what in UNSUPPORTED.items():
        if isinstance(e, kind):
            raise DslError(f"{what} is not available in the rows stage of a @cube_kernel", e.loc)
    if isinstance(e, ir.Numel) and tp.program.is_workspace(e.tensor):
        raise DslError(f"numel()/size() of the workspace '{e.tensor}': the host tiling knows the kernel's "
                       "tensors only (use width(t) for the row width)", e.loc)
    if isinstance(e, ir.Load) and e.mode in ("tile", "bcast") and (chunk is None or e.at != chunk.var):
        raise DslError(f"{'load' if e.mode == 'tile' else 'load_bcast'}() reads a chunk: use it inside "
                       "`for c in chunks(t, ...)` at the chunks variable", e.loc)
    if isinstance(e, ir.Load) and e.mode == "per_row":
        raise DslError("load_per_row() is load_group(x, t, 1) in the rows stage of a @cube_kernel", e.loc)
    if isinstance(e, ir.Fill) and (e.dtype != "f32" or (e.kind == "tile" and chunk is None)):
        raise DslError("row_fill/tile_fill are f32 in a @cube_kernel (tile_fill inside a chunks loop)", e.loc)
    if isinstance(e, ir.Cast) and e.dtype not in CUBE_TENSOR_DTYPES:
        raise DslError("the vector stage casts between f32, f16 and bf16", e.loc)
    if isinstance(e, ir.Binary) and e.op == "pow":
        raise DslError("x ** n takes an integer literal n in 1..4", e.loc)
    if isinstance(e, ARITH):
        name = getattr(e, "op", "leaky_relu" if isinstance(e, ir.LeakyRelu) else "**")
        for sub in _operands(e):
            t = tp.type_of(sub)
            if t.form != "scalar" and t.dtype != "f32":
                raise DslError(f"{name}: vector math in the cube DSL is f32; cast({t.dtype} value, f32) first",
                               e.loc)


def _operands(e: ir.Expr) -> tuple[ir.Expr, ...]:
    if isinstance(e, ir.Binary):
        return (e.lhs, e.rhs)
    return (e.base,) if isinstance(e, ir.Power) else (e.arg,)


GROUP_NODES = {ir.Index: "g[i] / g[a:b]", ir.Sinkhorn: "sinkhorn()"}


def check_vector_supported(tp: TypedProgram) -> None:
    """Raise DslError for the first construct of a @kernel the vector compute pass lacks."""
    where = "is available in the rows stage of a @cube_kernel only (a @kernel's tiling has no groups yet)"
    for s in tp.program.all_stmts():
        if isinstance(s, ir.InnerLoop) and s.parts != 1:
            raise DslError(f"chunks(..., parts=...) {where}", s.loc)
        if isinstance(s, ir.Store) and s.part is not None:
            raise DslError(f"store(y, c, v, part) {where}", s.loc)
        for e in ir.walk_exprs(s.value) if isinstance(s, (ir.Assign, ir.Store)) else ():
            for kind, what in GROUP_NODES.items():
                if isinstance(e, kind):
                    raise DslError(f"{what} {where}", e.loc)
            if isinstance(e, ir.Load) and (e.mode in ("cols", "group", "members") or e.part is not None):
                raise DslError(f"{'load' if e.mode == 'tile' else 'load_' + e.mode}() of groups or parts {where}",
                               e.loc)
            t = tp.types.get(id(e))
            if t is not None and t.form in ("row", "members") and t.size != 1:
                raise DslError(f"a group of {t.size} per-row values {where}", e.loc)


def check_ordered_split(p: ir.Program) -> None:
    """``blocks(..., ordered_split=ws)`` adds the K splits of a block into the fp32 workspace ``ws``
    in split order and converts the sum inside the cube launch, so the store goes to an Out tensor
    (no rows stage), the store is linear (a ReLU or a bias per split would be applied S times) and
    there are no tail pieces (a round of work items holds whole blocks)."""
    c = p.cube
    assert c is not None and c.ordered_split is not None
    if p.is_workspace(c.target) or p.vector is not None:
        raise DslError("ordered_split= combines the splits in the cube launch: store to an Out tensor, "
                       "with no rows stage", c.store_loc)
    if p.dtype_of(c.ordered_split) != "f32":
        raise DslError(f"ordered_split={c.ordered_split}: the partial sums are added in fp32: workspace(f32)",
                       c.loc)
    if c.relu or c.bias is not None:
        raise DslError("ordered_split= adds partial products: the store is acc or cast(acc, dtype), "
                       "with no relu() and no accumulator bias", c.store_loc)
    if c.tail != 0:
        raise DslError("ordered_split= takes no tail= (a round of work items holds whole blocks)", c.loc)
