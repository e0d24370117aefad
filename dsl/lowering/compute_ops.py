"""Expressions of the vector compute pass: one DSL expression → AscendC vector calls, writing
into a hinted destination (an output queue tensor or an accumulator) or a dead temporary
operand in place. Mixed into ``compute._Compute``, which owns statements, loops, queues and
the UB pools; the value and buffer types of the pass live here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .. import ir, ops
from ..names import mangle
from ..parser import DslError
from . import vector_ops

CTYPE = {"f32": "float", "f16": "half", "bf16": "bfloat16_t", "i32": "int32_t", "i64": "int64_t", "i8": "int8_t",
         "u8": "uint8_t", "bool": "uint8_t"}
NBYTES = ir.DTYPE_BYTES
CMP = {"lt": "LT", "gt": "GT", "le": "LE", "ge": "GE", "eq": "EQ", "ne": "NE"}
CMP_INVERSE = {"lt": "ge", "ge": "lt", "gt": "le", "le": "gt", "eq": "ne", "ne": "eq"}
CMP_SWAP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
VEC2 = {o.name: o.api for o in ops.BINARY.values() if o.api}  # one instruction: Add(dst, a, b, n)
VEC1 = {o.name: o.api for o in ops.UNARY.values() if o.api}  # one instruction: Exp(dst, src, n)
REDUCE = {o.name: o.api for o in ops.REDUCE.values()}
ROW_APPLY_OP = {"add": "ACX_ADD", "sub": "ACX_SUB", "mul": "ACX_MUL", "div": "ACX_DIV", "max": "ACX_MAX",
                "min": "ACX_MIN"}  # a tile with a row value, on the vector pipe (AcxRowApply in the prelude)
ERF_P, ERF_A = ops.ERF_P, ops.ERF_A


def cconst(v: float) -> str:
    if math.isinf(v):
        return "ACX_INF" if v > 0 else "(-ACX_INF)"
    if math.isnan(v):
        raise DslError("NaN constants are not supported")
    r = repr(float(v))
    return f"{r}f" if ("e" in r or "." in r) else f"{r}.0f"


@dataclass
class Buffer:
    """One UB allocation: a queue (slots = depth) or a VECCALC buffer."""

    name: str
    kind: str  # inq | outq | tmp | row | col | mask | red | work
    bytes_expr: str  # in the tiling formula language
    slots: int = 1
    tensor: str = ""
    dtype: str = ""
    form: str = ""  # queues: what one slot holds (tile | col | row)
    kept: str = ""  # heldq: the C++ flag true where a chunk was read from the hold buffer (no FreeTensor)


@dataclass
class Val:
    form: str  # tile | row | col | scalar
    dtype: str
    cpp: str  # LocalTensor name, or a C++ scalar expression
    buf: Buffer | None = None
    temp: bool = False  # an unnamed intermediate consumed exactly once
    origin: str = ""  # a queue tensor reinterpreted as another dtype (or viewed in part): the original tensor
    size: int = 1  # rows: a group of `size` per-row values, [size][rowElems] (member m at m * rowElems)

    @property
    def ctype(self) -> str:
        return CTYPE[self.dtype]


class Pool:
    """VECCALC buffers of one size, reused once a value is dead."""

    def __init__(self, kind: str, bytes_expr: str, prefix: str):
        self.kind, self.bytes_expr, self.prefix = kind, bytes_expr, prefix
        self.buffers: list[Buffer] = []
        self.free: list[Buffer] = []

    def get(self) -> Buffer:
        if self.free:
            self.free.sort(key=lambda b: b.name)
            return self.free.pop(0)
        b = Buffer(f"{self.prefix}{len(self.buffers)}", self.kind, self.bytes_expr)
        self.buffers.append(b)
        return b

    def put(self, b: Buffer) -> None:
        if b not in self.free:
            self.free.append(b)


def _same_storage(a: Val, b: Val) -> bool:
    """Whether two values occupy the same UB storage: the same pool buffer, or the same
    tensor of a queue (two loads of one input are two tensors of the same queue)."""
    if a.buf is not b.buf:
        return False
    return a.buf is None or a.buf.kind != "inq" or (a.origin or a.cpp) == (b.origin or b.cpp)



class ComputeOps:
    """Value lowering; the pass provides emit, pools, queues, counter, loop, p, tp, roles,
    uses_work, hoisted, live_defs, _release, _bind and the statement machinery."""

    def _count(self, v: Val | str) -> str:
        """Elements one instruction covers: a tile, a broadcast row, per-row values (a group of
        G of them: G members of rowElems each)."""
        if isinstance(v, Val) and v.form == "row" and v.size > 1:
            return f"{v.size} * td_.rowElems"
        return {"tile": "cnt", "row": "r", "col": "w"}[v if isinstance(v, str) else v.form]

    def _new(self, form: str, dtype: str, size: int = 1) -> Val:
        pool = self._group_pool(size) if size > 1 else {"tile": "tmp", "row": "row", "col": "col"}[form]
        b = self.pools[pool].get()
        self.counter += 1
        name = f"v{self.counter}"
        self.emit(f"LocalTensor<{CTYPE[dtype]}> {name} = {b.name}.Get<{CTYPE[dtype]}>();")
        return Val(form, dtype, name, b, temp=True, size=size)

    def _dest(self, form: str, dtype: str, hint: Val | None, operands: list[Val], pre=None,
              size: int | None = None) -> Val:
        """Where an op writes: the hint (out queue tensor / accumulator), else a dead temporary
        operand of the same form and size (in place), else a fresh buffer. The size of a
        group result is its first operand's unless given."""
        if hint is not None:
            if pre is not None:
                pre()
            return hint
        if size is None:
            size = operands[0].size if operands else 1
        for v in operands:
            if v.temp and v.buf is not None and v.form == form and v.size == size and v.buf.kind not in ("outq", "heldq") and \
                    (v.buf.kind not in ("inq", "bindq") or NBYTES[v.buf.dtype] >= NBYTES[dtype]):
                if v.dtype != dtype:
                    self.counter += 1
                    name = f"v{self.counter}"
                    self.emit(f"LocalTensor<{CTYPE[dtype]}> {name} = {v.cpp}.ReinterpretCast<{CTYPE[dtype]}>();")
                    return Val(form, dtype, name, v.buf, temp=True, origin=v.origin or v.cpp, size=size)
                return Val(form, dtype, v.cpp, v.buf, temp=True, origin=v.origin, size=size)
        return self._new(form, dtype, size)

    def _mask(self) -> tuple[Buffer, str]:
        """A compare-result buffer from the mask pool and a named uint8 tensor over it; give
        the buffer back with ``self.pools["mask"].put`` when the Select is emitted."""
        mask = self.pools["mask"].get()
        self.counter += 1
        m = f"m{self.counter}"
        self.emit(f"LocalTensor<uint8_t> {m} = {mask.name}.Get<uint8_t>();")
        return mask, m

    def _done(self, operands: list[Val], dst: Val) -> None:
        for v in operands:
            if v.temp and v.buf is not None and not _same_storage(v, dst):
                self._release(v)

    def _scalar(self, v: Val, ctype: str) -> str:
        return f"static_cast<{ctype}>({v.cpp})"

    def _expr(self, e: ir.Expr, loop_var: str, hint: Val | None = None, pre=None) -> Val:
        t = self.tp.type_of(e)
        if t.form == "scalar":
            return Val("scalar", "f32", self._scalar_cpp(e))
        if isinstance(e, ir.Var):
            d = self.def_of[id(e)]
            v = self.live_defs[d]
            dies = v.buf is not None and (v.buf.kind == "bindq" or self._named_tile_dies(d, v)) \
                and self._slot_dies_here(e)
            return Val(v.form, v.dtype, v.cpp, v.buf, temp=dies, origin=v.origin, size=v.size)
        if isinstance(e, ir.Load):
            v = self._load(e)
            return self._finish(v, hint, pre)
        if isinstance(e, ir.Pick):
            return self._pick(e, hint, pre)
        if isinstance(e, ir.GatherRows):
            return self._finish(self._gather_rows(e), hint, pre)
        if isinstance(e, ir.GatherCols):
            return self._gather_cols(e, hint, pre)
        if isinstance(e, ir.IndexAddRows):
            return self._index_add_rows(e, loop_var, hint, pre)
        if isinstance(e, ir.LoadRowsBcast):
            return self._finish(self._load_rows_bcast(e), hint, pre)
        if isinstance(e, ir.LoadPerRowEvery):
            return self._load_per_row_every(e, hint, pre)
        if isinstance(e, ir.LoadEvery):
            return self._load_every(e, hint, pre)
        if isinstance(e, ir.LoadBcastEvery):
            return self._load_bcast_every(e)
        if isinstance(e, ir.LoadSlice):
            return self._finish(self._load_slice(e), hint, pre)
        if isinstance(e, ir.Scan):
            a = self._expr(e.arg, loop_var)
            carry = self._expr(e.carry, loop_var)
            return self._scan(e.op, a, carry, hint, pre, e.lanes, e.reverse, e.tables_once)
        if isinstance(e, ir.RowLast):
            a = self._expr(e.arg, loop_var)
            d = self._dest("row", a.dtype, hint, [], pre)
            col = "1" if e.first else "w"  # row_first: the element at column 0 = AcxRowLast of width 1
            if a.dtype in ("f32", "f16"):  # on the vector pipe: no V->S sync in the chunks loop
                buf = self.pools["bc"].get()
                self.emit(f"AcxRowLast({d.cpp}, {a.cpp}, {buf.name}.Get<{a.ctype}>(), r, {col}, wp);")
                self.pools["bc"].put(buf)
            else:
                self.emit("SyncVS();")
                self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
                self.emit(f"    {d.cpp}.SetValue(ri, {a.cpp}.GetValue(ri * wp + {col} - 1));")
                self.emit("}")
                self.emit("SyncSV();")
            self._done([a], d)
            return d
        if isinstance(e, ir.StepLoad) and self.loop.hold:  # every step's value on its row, built once a core
            return self._finish(self._held_steps(e), hint, pre)
        if isinstance(e, ir.StepLoad):  # blocked steps: row j holds v[k0 + j]
            return self._block_steps(e, hint, pre)
        if isinstance(e, ir.Position) and self.loop.kind == "slabs":  # blocked steps: row j is step k0 + j
            d = self._dest("tile", "f32", hint, [], pre)
            self.emit("for (int64_t j = 0; j < kb; ++j) {  // each step's index on its row of the block")
            self.emit(f"    Duplicate({d.cpp}[j * cntp], static_cast<float>(k0 + j), static_cast<int32_t>(cntp));")
            self.emit("}")
            return d
        if isinstance(e, ir.Position):
            d = self._dest("tile", "f32", hint, [], pre)
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {  // each element's column in its row")
            self.emit(f"    CreateVecIndex({d.cpp}[ri * wp], static_cast<float>(c0), static_cast<uint32_t>(wp));")
            self.emit("}")
            return d
        if isinstance(e, ir.RowPosition):
            return self._row_position(e, hint, pre)
        if isinstance(e, ir.WindowRecip):
            return self._window_recip(e, hint, pre)
        if isinstance(e, ir.Fill):
            form = "row" if e.kind == "row" else "tile"
            d = self._dest(form, e.dtype, hint, [], pre)
            self.emit(f"Duplicate({d.cpp}, static_cast<{CTYPE[e.dtype]}>({cconst(e.value)}), {self._count(form)});")
            return d
        if isinstance(e, ir.Cast):
            if self.tp.type_of(e.arg).dtype == e.dtype:  # a no-op cast
                v = self._expr(e.arg, loop_var, hint, pre)
                return self._finish(v, hint, pre) if hint is not None and v.buf is not hint.buf else v
            a = self._expr(e.arg, loop_var)
            return self._cast(a, e.dtype, hint, pre)
        if isinstance(e, ir.Unary):
            a = self._expr(e.arg, loop_var)
            return self._unary(e.op, a, hint, pre)
        if isinstance(e, ir.Power):
            return self._power(self._expr(e.base, loop_var), e.n, hint, pre)
        if isinstance(e, ir.LeakyRelu):
            a = self._expr(e.arg, loop_var)
            d = self._dest(a.form, a.dtype, hint, [a], pre)
            self.emit(f"LeakyRelu({d.cpp}, {a.cpp}, static_cast<{a.ctype}>({cconst(e.slope)}), {self._count(a)});")
            self._done([a], d)
            return d
        if isinstance(e, ir.RowReduce):
            a = self._expr(e.arg, loop_var)
            return self._row_reduce(e.op, a, hint, pre)
        if isinstance(e, ir.Binary):
            a = self._expr(e.lhs, loop_var)
            b = self._expr(e.rhs, loop_var)
            return self._binary(e.op, a, b, hint, pre)
        if isinstance(e, ir.Select):
            return self._select(e, loop_var, hint, pre)
        if isinstance(e, ir.Index):
            return self._finish(self._index(e, loop_var), hint, pre)
        if isinstance(e, ir.Sinkhorn):
            return self._sinkhorn(e, loop_var, hint, pre)
        raise DslError(f"cannot lower {type(e).__name__}", e.loc)

    def _scan(self, op: str, a: Val, carry: Val, hint: Val | None, pre, lanes: int = 0,
              reverse: bool = False, tables_once: bool = True) -> Val:
        """Inclusive scan along each row, then each row combined with its carry. ``lanes`` > 0:
        the blocked scan (:meth:`_scan_blocked`) where the chunk allows it, Hillis-Steele in
        the other branch; 0: Hillis-Steele only. ``reverse``: from each row's end, in that
        order (no total-minus-prefix, so nothing cancels). ``tables_once``: the blocked scan's
        tables are built once per chunk width (else in every chunk, their buffers back in the pool)."""
        if a.dtype != "f32":
            raise DslError("scan_*() runs on f32 tiles: cast first")
        d = self._dest("tile", "f32", hint, [a], pre)
        if lanes:
            steps = int(math.log2(lanes))
            self.counter += 1
            self.emit(f"const int64_t sS{self.counter} = acx_align_up((w + {lanes} - 1) / {lanes}, 8);")
            seg = f"sS{self.counter}"
            # the [S][lanes] tables live in col buffers of align_up(wp, 128) elements (colElems >= wp)
            self.emit(f"if (w > {lanes} && {seg} * {lanes} <= acx_align_up(wp, 128) && "
                      f"{(steps + 3) * lanes} <= acx_align_up(wp, 128)) {{")
            self.scan_tables = None
            self._scan_blocked(op, a, d, carry, lanes, seg, reverse, tables_once)
            self.emit("} else {")
            kept = self.scan_tables
            if kept is not None:  # the tables stay out of the pool, but this branch may use them
                bufs, built = kept
                self.emit(f"{built} = -1;  // the tables' buffers are scratch here")
                for b in bufs:
                    self.pools["col"].put(b)
            self._scan_steps(op, a, d, carry, reverse)
            if kept is not None:
                self.pools["col"].free = [b for b in self.pools["col"].free if b not in kept[0]]
            self.emit("}")
        else:
            self._scan_steps(op, a, d, carry, reverse)
        self._done([a, carry], d)
        return d

    def _scan_steps(self, op: str, a: Val, d: Val, carry: Val, reverse: bool = False) -> None:
        """Hillis-Steele: for s = 1, 2, 4, ... < w every element combines with the one s to its
        left, fetched with Gather (byte offsets max(j - s, 0) * 4); lanes j < s take the
        identity via CompareScalar + Select. log2(w) steps of three vector ops per row.
        ``reverse``: the one s to its right (min(j + s, w - 1)), lanes j >= w - s the identity."""
        ident, vop = cconst(ops.SCAN[op].identity), ops.SCAN[op].api
        if d.buf is not a.buf or d.cpp != a.cpp:
            self._copy(d, a)
        idx = self._new("col", "i32")
        col = self._new("col", "f32")
        off = self._new("col", "i32")
        g = self._new("col", "f32")
        mask, m = self._mask()
        self.emit(f"CreateVecIndex({idx.cpp}, static_cast<int32_t>(0), static_cast<uint32_t>(wp));")
        self.emit(f"Muls({idx.cpp}, {idx.cpp}, static_cast<int32_t>(4), static_cast<int32_t>(wp));")
        self.emit(f"CreateVecIndex({col.cpp}, 0.0f, static_cast<uint32_t>(wp));")
        self.emit("for (int64_t s = 1; s < w; s *= 2) {")
        if reverse:
            self.emit(f"    Adds({off.cpp}, {idx.cpp}, static_cast<int32_t>(4 * s), static_cast<int32_t>(wp));")
            self.emit(f"    Mins({off.cpp}, {off.cpp}, static_cast<int32_t>(4 * (w - 1)), static_cast<int32_t>(wp));")
            self.emit(f"    CompareScalar({m}, {col.cpp}, static_cast<float>(w - s), CMPMODE::LT, acx_align_up(wp, 64));")
        else:
            self.emit(f"    Adds({off.cpp}, {idx.cpp}, static_cast<int32_t>(-4 * s), static_cast<int32_t>(wp));")
            self.emit(f"    Maxs({off.cpp}, {off.cpp}, static_cast<int32_t>(0), static_cast<int32_t>(wp));")
            self.emit(f"    CompareScalar({m}, {col.cpp}, static_cast<float>(s), CMPMODE::GE, acx_align_up(wp, 64));")
        self.emit("    for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"        Gather({g.cpp}, {d.cpp}[ri * wp], {off.cpp}.ReinterpretCast<uint32_t>(), 0u, "
                  "static_cast<uint32_t>(w));")
        self.emit(f"        Select({g.cpp}, {m}, {g.cpp}, {ident}, SELMODE::VSEL_TENSOR_SCALAR_MODE, acx_align_up(w, 64));")
        self.emit(f"        {vop}({d.cpp}[ri * wp], {d.cpp}[ri * wp], {g.cpp}, static_cast<int32_t>(w));")
        self.emit("    }")
        self.emit("}")
        self.pools["mask"].put(mask)
        for v in (idx, col, off, g):
            self._release(v)
        self.emit("SyncVS();")
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"    const float cv = static_cast<float>({carry.cpp}.GetValue(ri));")
        self._scalar_op({"sum": "add", "prod": "mul", "max": "max"}[op], f"{d.cpp}[ri * wp]",
                        f"{d.cpp}[ri * wp]", "cv", "float", False, "w", "    ")
        self.emit("}")

    def _scan_blocked(self, op: str, a: Val, d: Val, carry: Val, L: int, S: str, reverse: bool = False,
                      tables_once: bool = True) -> None:
        """The blocked scan: a row's chunk of w is cut into L contiguous segments of S (a
        multiple of 8, S * L >= w) and transposed by one Gather into [S][L], so one vector op
        of L lanes advances every segment by one element: S - 1 ops scan all segments at once.
        The segments' totals (the last of the S rows) get an exclusive Hillis-Steele scan on
        L lanes only, combined with the row's carry; one op per row of [S][L] applies it and
        a second Gather transposes back. Per element: two Gathers and two ops, against
        log2(w) x (Gather, Select, op) for Hillis-Steele. Positions past w (the padding of
        the last segments) come last in the scan order, so they never reach an output.
        ``reverse``: the same on the chunk read backwards — scan position j is element w - 1 - j
        (the forward table mirrored), and output i reads the cell of position w - 1 - i (the
        inverse table gathered through a reversed index): two more table ops per chunk, none per
        element."""
        ident, vop = cconst(ops.SCAN[op].identity), ops.SCAN[op].api
        steps = int(math.log2(L))
        t = self._new("col", "f32")  # the transposed chunk [S][L]
        # the tables depend on w alone: in a vector kernel they get buffers of their own and are
        # built when w changes (once per kernel when every chunk is full), not once per chunk
        hoist = tables_once and not self.after_cube
        fw = self._new("col", "i32")  # Gather offsets chunk -> [S][L]: (l * S + s) * 4, clamped to w - 1
        inv = self._new("col", "i32")  # Gather offsets [S][L] -> chunk: (s * L + l) * 4 at l * S + s
        sh = self._new("col", "i32")  # rows 0..steps: shift offsets max(l - (1, 1, 2, 4, ...), 0) * 4; lane ids; zeros
        e = self._new("col", "f32")  # the segments' exclusive prefix [L]
        gt = self._new("col", "f32")  # a shifted copy of it [L] (Gather forbids dst overlapping src)
        mask, m = self._mask()
        i32 = "static_cast<int32_t>"
        lf = f"{sh.cpp}[{(steps + 1) * L}].ReinterpretCast<float>()"
        if hoist:
            built = f"scanW{fw.cpp}"
            self.scan_tables = ([fw.buf, inv.buf, sh.buf], built)
            self.init_lines.append(f"int64_t {built} = -1;  // the chunk width the blocked scan's tables hold")
            self.emit(f"if (w != {built}) {{  // the scan's tables, rebuilt only when the chunk width changes")
            self.emit(f"{built} = w;")
        self.emit(f"CreateVecIndex({fw.cpp}, {i32}(0), {L}u);")
        self.emit(f"Muls({fw.cpp}, {fw.cpp}, {i32}(4 * {S}), {L});")
        self.emit(f"for (int64_t k = 1; k < {S}; k *= 2) Adds({fw.cpp}[k * {L}], {fw.cpp}, {i32}(4 * k), "
                  f"{i32}(acx_min(k, {S} - k) * {L}));")
        self.emit(f"if (w < {S} * {L}) Mins({fw.cpp}, {fw.cpp}, {i32}(4 * (w - 1)), {i32}({S} * {L}));")
        # reverse: the inverse table is built in e (free until the scan) and gathered mirrored
        it = e.cpp + ".ReinterpretCast<int32_t>()" if reverse else inv.cpp
        self.emit(f"CreateVecIndex({it}, {i32}(0), static_cast<uint32_t>({S}));")
        self.emit(f"Muls({it}, {it}, {i32}({4 * L}), {i32}({S}));")
        self.emit(f"for (int64_t k = 1; k < {L}; k *= 2) Adds({it}[k * {S}], {it}, {i32}(4 * k), "
                  f"{i32}(acx_min(k, {L} - k) * {S}));")
        if reverse:
            ti = f"{t.cpp}.ReinterpretCast<int32_t>()"  # scratch: the mirrored byte index 4 * (w - 1 - i)
            self.emit(f"Muls({fw.cpp}, {fw.cpp}, {i32}(-1), {i32}({S} * {L}));")
            self.emit(f"Adds({fw.cpp}, {fw.cpp}, {i32}(4 * (w - 1)), {i32}({S} * {L}));")
            self.emit(f"CreateVecIndex({ti}, {i32}(0), static_cast<uint32_t>(w));")
            self.emit(f"Muls({ti}, {ti}, {i32}(-4), {i32}(w));")
            self.emit(f"Adds({ti}, {ti}, {i32}(4 * (w - 1)), {i32}(w));")
            self.emit(f"Gather({inv.cpp}.ReinterpretCast<float>(), {e.cpp}, {ti}.ReinterpretCast<uint32_t>(), 0u, "
                      "static_cast<uint32_t>(w));")
        self.emit(f"CreateVecIndex({sh.cpp}, {i32}(0), {L}u);")
        self.emit(f"Muls({sh.cpp}, {sh.cpp}, {i32}(4), {L});")
        self.emit(f"for (int64_t k = {steps}; k >= 0; --k) {{")
        self.emit(f"    Adds({sh.cpp}[k * {L}], {sh.cpp}, {i32}(-4 * (k == 0 ? 1 : (1 << (k - 1)))), {L});")
        self.emit(f"    Maxs({sh.cpp}[k * {L}], {sh.cpp}[k * {L}], {i32}(0), {L});")
        self.emit("}")
        self.emit(f"CreateVecIndex({lf}, 0.0f, {L}u);")
        zero = f"{sh.cpp}[{(steps + 2) * L}]"
        self.emit(f"Duplicate({zero}, {i32}(0), {L});")
        if hoist:
            self.emit("}")
        g = gt.cpp
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"    Gather({t.cpp}, {a.cpp}[ri * wp], {fw.cpp}.ReinterpretCast<uint32_t>(), 0u, "
                  f"static_cast<uint32_t>({S} * {L}));")
        self.emit(f"    for (int64_t s = 1; s < {S}; ++s) {vop}({t.cpp}[s * {L}], {t.cpp}[s * {L}], "
                  f"{t.cpp}[(s - 1) * {L}], {L});")
        self.emit(f"    Gather({e.cpp}, {t.cpp}[({S} - 1) * {L}], {sh.cpp}.ReinterpretCast<uint32_t>(), 0u, {L}u);")
        self.emit(f"    CompareScalar({m}, {lf}, 1.0f, CMPMODE::GE, {L});")
        self.emit(f"    Select({e.cpp}, {m}, {e.cpp}, {ident}, SELMODE::VSEL_TENSOR_SCALAR_MODE, {L});")
        self.emit(f"    for (int64_t k = 1; k <= {steps}; ++k) {{")
        self.emit(f"        Gather({g}, {e.cpp}, {sh.cpp}[k * {L}].ReinterpretCast<uint32_t>(), 0u, {L}u);")
        self.emit(f"        CompareScalar({m}, {lf}, static_cast<float>(1 << (k - 1)), CMPMODE::GE, {L});")
        self.emit(f"        Select({g}, {m}, {g}, {ident}, SELMODE::VSEL_TENSOR_SCALAR_MODE, {L});")
        self.emit(f"        {vop}({e.cpp}, {e.cpp}, {g}, {L});")
        self.emit("    }")
        self.emit(f"    Gather({g}, {carry.cpp}, {zero}.ReinterpretCast<uint32_t>(), static_cast<uint32_t>(ri * 4), {L}u);")
        self.emit(f"    {vop}({e.cpp}, {e.cpp}, {g}, {L});")
        self.emit(f"    for (int64_t s = 0; s < {S}; ++s) {vop}({t.cpp}[s * {L}], {t.cpp}[s * {L}], {e.cpp}, {L});")
        self.emit(f"    Gather({d.cpp}[ri * wp], {t.cpp}, {inv.cpp}.ReinterpretCast<uint32_t>(), 0u, "
                  "static_cast<uint32_t>(w));")
        self.emit("}")
        self.pools["mask"].put(mask)
        for v in (t, e, gt) if hoist else (t, fw, inv, sh, e, gt):
            self._release(v)

    def _pick(self, e: ir.Pick, hint: Val | None, pre) -> Val:
        """x[row, idx[row]] per row: two scalar GM reads per row (an index gather); a row whose
        index is ``ignore`` reads nothing and gives 0, any other index outside the row stops the
        kernel (Trap) before the read."""
        dtype = self.p.param(e.tensor).dtype
        self.roles[e.index] = "index"
        self.roles.setdefault(e.tensor, "tile")
        d = self._dest("row", dtype, hint, [], pre)
        self.emit("SyncVS();")
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"    const int64_t ix = static_cast<int64_t>({mangle('gm', e.index)}.GetValue(gr + ri));")
        if e.ignore is not None:
            self.emit(f"    if (ix == {int(e.ignore)}) {{  // an ignored row (ignore_index): nothing read")
            self.emit(f"        {d.cpp}.SetValue(ri, static_cast<{CTYPE[dtype]}>(0.0f));")
            self.emit("        continue;")
            self.emit("    }")
        self.emit("    if (ix < 0 || ix >= td_.W) Trap();  // a class index outside the row")
        self.emit(f"    {d.cpp}.SetValue(ri, {mangle('gm', e.tensor)}.GetValue((gr + ri) * td_.W + ix));")
        self.emit("}")
        self.emit("SyncSV();")
        return d

    def _held_steps(self, e: ir.StepLoad) -> Val:
        """``load_step(v, k)`` in a ``slabs(hold=True)`` loop: the block is every step of K at a UB
        row stride that is the same for every tile, so v's K values, one a row, are the same
        tile for all of them: built on the core's first tile into a resident buffer (K scalar
        reads a core, not a tile) and never written over (not a temporary)."""
        key = f"rst:{e.tensor}"
        buf = self.queues.get(key)
        self.counter += 1
        name = mangle(f"rst{self.counter}", e.tensor)
        self.emit(f"LocalTensor<float> {name} = {mangle('rstep', e.tensor)}.Get<float>();")
        if buf is None:
            buf = Buffer(mangle("rstep", e.tensor), "res", "align_up(tileElems, 128) * 4",
                         tensor=e.tensor, dtype="f32", form="tile")
            self.queues[key] = buf
            self.emit("if (j == 0) {  // this core's first tile: v[k] on row k, kept for every tile")
            self.indent += 1
            gm = self._step_values(e, "td_.K")
            self.emit("for (int64_t kk = 0; kk < td_.K; ++kk) {")
            self.emit(f"    Duplicate({name}[kk * cntp], static_cast<float>({gm}.GetValue(kk)), "
                      "static_cast<int32_t>(cntp));")
            self.emit("}")
            self.indent -= 1
            self.emit("}")
        return Val("tile", "f32", name, buf, temp=False)

    def _block_steps(self, e: ir.StepLoad, hint: Val | None, pre) -> Val:
        """``load_step(v, k)`` in a blocked steps loop: row j of the block holds v[k0 + j]. The kb
        values come in one copy through a queue of their own (double-buffered like the block's
        loads), go to 32 B blocks by Brcb and across each row by a repeat-form add with block
        stride 0 - no scalar read of GM a step, which would hold the scalar unit until the
        vector pipe drains (GetValue) and so stop the next block's copy being issued early."""
        gm = self._step_values(e, "k0 + kb")
        dtype = self.p.param(e.tensor).dtype
        q = self._queue(e.tensor, "inq", "row")
        self.counter += 1
        name = mangle(f"ld{self.counter}", e.tensor)
        t = CTYPE[dtype]
        self._copy_in(q, name, t, f"CopyRowsIn({name}, {gm}[k0], 1, kb, kb, td_.rowElems);  // the block's kb step values")
        raw = Val("row", dtype, name, q, temp=True)
        vals = raw
        if dtype != "f32":
            vals = self._new("row", "f32")
            self.emit(f"Cast({vals.cpp}, {name}, RoundMode::CAST_NONE, static_cast<int32_t>(kb));")
        bc = self.pools["bc"].get()
        self.counter += 1
        blocks = f"bc{self.counter}"
        self.emit(f"LocalTensor<float> {blocks} = {bc.name}.Get<float>();")
        self.emit(f"AcxBrcbRows({blocks}, {vals.cpp}, kb);")
        self._release(raw)
        if vals is not raw:
            self._release(vals)
        d = self._dest("tile", "f32", hint, [], pre)
        self.emit(f"Duplicate({d.cpp}, 0.0f, static_cast<int32_t>(kb * cntp));")
        self.emit(f"AcxRowApply<ACX_ADD, false>({d.cpp}, {d.cpp}, {blocks}, kb, bcnt, cntp);  // row j: v[k0 + j]")
        self.pools["bc"].put(bc)
        return d

    def _step_values(self, e: ir.StepLoad, steps: str) -> str:
        """The GM tensor ``load_step`` reads by scalar reads, after a check that it holds the
        ``steps`` (a C++ count) steps read so far; a shorter one stops the kernel."""
        n = self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))
        self.roles[e.tensor] = "gather_src"
        self.emit(f"if ({steps} > {n}) Trap();  // v has fewer elements than the reduced axis has steps")
        return mangle("gm", e.tensor)

    def _gather_field(self, name: str, e: ir.Numel) -> str:
        """A tensor extent the gather needs, as a host tiling field (registered once)."""
        if all(n != name for n, _ in self.host_scalars):
            self.host_scalars.append((name, e))
        return f"static_cast<int64_t>(td_.{name})"

    def _gather_rows(self, e: ir.GatherRows) -> Val:
        """Rows of ``x`` at indices read from GM: one scalar index read and one DataCopy per
        row; an index outside [0, size(x, dim)) stops the kernel (Trap) before any read."""
        dtype = self.p.param(e.tensor).dtype
        self.roles[e.index] = "gather_index"
        self.roles[e.tensor] = "gather_src"
        k = self._gather_field(mangle("gk", e.index), ir.Numel(e.loc, e.index))
        b = self._gather_field(f"{mangle('gb', e.tensor)}_{e.dim}", ir.Numel(e.loc, e.tensor, e.dim))
        self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))
        return self._rows_by_copy(e.tensor, dtype, "gat", [
            f"const int64_t gk = {k}, gb = {b};",
            f"const int64_t ix = static_cast<int64_t>({mangle('gm', e.index)}.GetValue((gr + ri) % gk));",
            "if (ix < 0 || ix >= gb) Trap();  // an index outside the gathered dim"],
            "((gr + ri) / gk) * gb + ix")

    def _loop_width(self) -> str:
        """The rows loop's row width in the tiling (a @kernel's ``W``, a cube rows stage's ``vW``)."""
        return "td_.vW" if self.after_cube else "td_.W"

    def _rows_by_copy(self, tensor: str, dtype: str, prefix: str, head: list[str], row: str) -> Val:
        """A tile whose row ri is row ``row`` of ``tensor`` (C++ over ri, after the ``head``
        lines): one DataCopy per row into a tile of the tensor's input queue."""
        q = self._queue(tensor, "inq", "tile")
        self.counter += 1
        name = mangle(f"{prefix}{self.counter}", tensor)
        t = CTYPE[dtype]
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {  // one row per DataCopy")
        for line in head:
            self.emit(f"    {line}")
        lw = self._loop_width()
        self.emit(f"    CopyRowsIn({name}[ri * wp], {mangle('gm', tensor)}[({row}) * {lw} + c0], 1, w, {lw}, wp);")
        self.emit("}")
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")
        return Val("tile", dtype, name, q, temp=True)

    def _gather_cols(self, e: ir.GatherCols, hint: Val | None, pre) -> Val:
        """x[g, idx[g, j]] per element of a rows tile over idx: a scalar read of the index and
        of the element (scalar GM reads, the S pipe); an index outside [0, size(x, -1)) stops
        the kernel (Trap) before the read."""
        dtype = self.p.param(e.tensor).dtype
        self.roles[e.index] = "gather_index" if e.shared else "tile"
        if e.shared:
            self._gather_field(mangle("gk", e.index), ir.Numel(e.loc, e.index))
        self.roles[e.tensor] = "gather_src"
        wx = self._gather_field(f"{mangle('gb', e.tensor)}_last", ir.Numel(e.loc, e.tensor, -1))
        self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))
        d = self._dest("tile", dtype, hint, [], pre)
        self.emit("SyncVS();")
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {  // one scalar read per gathered element")
        self.emit(f"    const int64_t gw = {wx};")
        self.emit("    for (int64_t j = 0; j < w; ++j) {")
        at = "c0 + j" if e.shared else "(gr + ri) * td_.W + c0 + j"
        self.emit(f"        const int64_t ix = static_cast<int64_t>({mangle('gm', e.index)}.GetValue({at}));")
        if e.wrap:
            self.emit("        const int64_t iw = ((ix % gw) + gw) % gw;  // modulo the row, as Python's %")
        else:
            self.emit("        if (ix < 0 || ix >= gw) Trap();  // an index outside the gathered dim")
        self.emit(f"        {d.cpp}.SetValue(ri * wp + j, {mangle('gm', e.tensor)}.GetValue((gr + ri) * gw + "
                  f"{'iw' if e.wrap else 'ix'}));")
        self.emit("    }")
        self.emit("}")
        self.emit("SyncSV();")
        return d

    def _load_rows_bcast(self, e: ir.LoadRowsBcast) -> Val:
        """Row (g // d) % R of x for each tile row g (an operand broadcast on both sides of its own
        block of leading dims; with a window, R = n rows, row j at element o + (j // m) * q +
        (j % m) * p): with d = 1 a tile's rows read consecutive rows until a block of m ends or
        row R - 1 wraps to 0, so one strided copy per run; otherwise one copy per row."""
        dtype = self.p.param(e.tensor).dtype
        self.roles[e.tensor] = "gather_src"
        div = self._scalar_cpp(e.arg)
        n = self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))  # the GM buffer's size
        lw = self._loop_width()
        if e.window is not None:  # n rows p apart from element o: int64 fields the host checked
            key = (e.tensor, tuple(repr(_strip_loc(w)) for w in e.window))
            k = next((i for i, (_, x, ws) in enumerate(self.row_windows)
                      if (x, tuple(repr(_strip_loc(w)) for w in ws)) == key), None)
            if k is None:
                k = len(self.row_windows)
                self.row_windows.append((tuple(mangle(f"rw{f}{k}", e.tensor) for f in "npomq"), e.tensor, e.window))
            rows, pitch, off, blk, bp = (f"td_.{f}" for f in self.row_windows[k][0])
            head = [f"const int64_t gd = static_cast<int64_t>({div}), gr_ = {rows}, gp = {pitch}, go = {off}, "
                    f"gm_ = {blk}, gq = {bp};",
                    "if (gd < 1) Trap();  // a divisor below 1"]
        else:
            head = [f"const int64_t gd = static_cast<int64_t>({div}), gr_ = {n} / {lw}, gp = {lw}, go = 0, "
                    "gm_ = gr_, gq = 0;",
                    "if (gd < 1 || gr_ < 1) Trap();  // a divisor or row count below 1"]
        q = self._queue(e.tensor, "inq", "tile")
        self.counter += 1
        name = mangle(f"bcr{self.counter}", e.tensor)
        t = CTYPE[dtype]
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
        self.emit("{")
        for line in head:
            self.emit(f"    {line}")
        self.emit("    for (int64_t ri = 0; ri < r;) {  // one copy per run of rows: consecutive ones, or one row's")
        self.emit("        const int64_t j = ((gr + ri) / gd) % gr_, jb = j % gm_;")
        self.emit("        const int64_t run = gd == 1 ? acx_min(acx_min(r - ri, gr_ - j), gm_ - jb)  // to a block's end")
        self.emit("                                    : acx_min(r - ri, gd - (gr + ri) % gd);  // the rows sharing row j")
        self.emit(f"        CopyRowsIn({name}[ri * wp], {mangle('gm', e.tensor)}[go + (j / gm_) * gq + jb * gp + c0], "
                  "gd == 1 ? run : 1, w, gp, wp);")
        self.emit("        ri += run;")
        self.emit("    }")
        self.emit(f"    {q.name}.EnQue({name});")
        self.emit(f"    {name} = {q.name}.DeQue<{t}>();")
        self.emit("    if (gd > 1) {  // a run's other rows from its first, on the vector pipe (no GM copy a row)")
        self.emit("        for (int64_t ri = 0; ri < r;) {")
        self.emit("            const int64_t run = acx_min(r - ri, gd - (gr + ri) % gd);")
        self.emit(f"            for (int64_t k = 1; k < run; ++k) DataCopy({name}[(ri + k) * wp], {name}[ri * wp], "
                  "static_cast<uint32_t>(wp));")
        self.emit("            ri += run;")
        self.emit("        }")
        self.emit("        PipeBarrier<PIPE_V>();")
        self.emit("    }")
        self.emit("}")
        return Val("tile", dtype, name, q, temp=True)

    def _runs_head(self, e: ir.LoadPerRowEvery | ir.LoadEvery | ir.LoadBcastEvery) -> None:
        """Open the block of a per-run operand: ``gd`` (d, checked to be a whole number >= 1)
        and ``gv`` (numel(v), >= 1) as C++ values; v read by scalar GM reads."""
        self.roles[e.tensor] = "gather_src"
        n = self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))
        self.emit("{")
        self.emit(f"    const float gdf = {self._scalar_cpp(e.arg)};")
        self.emit(f"    const int64_t gd = static_cast<int64_t>(gdf), gv = {n};")
        self.emit("    if (gd < 1 || static_cast<float>(gd) != gdf || gv < 1) Trap();  // d not a whole number >= 1")

    def _load_per_row_every(self, e: ir.LoadPerRowEvery, hint: Val | None, pre) -> Val:
        """v[(g // d) % numel(v)] for each tile row g. With d = 1 and the tile's rows inside one
        period of v (rows of a [N*C, H*W] view, C per-channel values: a tile of R rows, R | C),
        they read consecutive values: one copy, from 16 rows on (below, the copy and its two
        pipe barriers model slower than the scalar reads: eval BatchNorm2d [64, 512, 7, 7] at 8
        rows a tile 68.5 us against 60.3, at 16 rows 42.5 against 54.8). Otherwise rows come in
        runs of d sharing one value: one scalar GM read per run (a tile of R rows meets at most
        R // d + 2 runs) and one scalar UB write per row."""
        dtype = self.p.param(e.tensor).dtype
        d = self._dest("row", dtype, hint, [], pre)
        t = CTYPE[dtype]
        self._runs_head(e)
        self.emit("    const int64_t j0 = gr % gv;")
        self.emit("    if (gd == 1 && j0 + r <= gv && r >= 16) {  // consecutive values, enough of them: one copy")
        self.emit("        SetFlag<HardEvent::V_MTE2>(3); WaitFlag<HardEvent::V_MTE2>(3);  // the buffer's last readers")
        self.emit(f"        CopyRowsIn({d.cpp}, {mangle('gm', e.tensor)}[j0], 1, r, r, r);")
        self.emit("        SetFlag<HardEvent::MTE2_V>(3); WaitFlag<HardEvent::MTE2_V>(3);")
        self.emit("    } else {")
        self._per_row_runs(d, t, e.tensor)
        self.emit("    }")
        self.emit("}")
        return d

    def _per_row_runs(self, d: Val, t: str, tensor: str) -> None:
        """The scalar path of :meth:`_load_per_row_every` (inside its block)."""
        self.emit("    SyncVS();")
        self.emit("    for (int64_t ri = 0; ri < r;) {  // one scalar read per run of rows sharing a value")
        self.emit("        const int64_t g_ = gr + ri, run = gd - g_ % gd < r - ri ? gd - g_ % gd : r - ri;")
        self.emit(f"        const {t} pv = {mangle('gm', tensor)}.GetValue((g_ / gd) % gv);")
        self.emit("        for (int64_t k = 0; k < run; ++k) {")
        self.emit(f"            {d.cpp}.SetValue(ri + k, pv);")
        self.emit("        }")
        self.emit("        ri += run;")
        self.emit("    }")
        self.emit("    SyncSV();")

    def _row_position(self, e: ir.RowPosition, hint: Val | None, pre) -> Val:
        """(g // d) % n for each tile row g, as f32: one scalar UB write per row (exact below
        2^24, where every f32 index is)."""
        d = self._dest("row", "f32", hint, [], pre)
        self.emit("{")
        self.emit(f"    const float pdf = {self._scalar_cpp(e.arg)}, pnf = {self._scalar_cpp(e.count)};")
        self.emit("    const int64_t pd = static_cast<int64_t>(pdf), pn = static_cast<int64_t>(pnf);")
        self.emit("    if (pd < 1 || pn < 1 || static_cast<float>(pd) != pdf || static_cast<float>(pn) != pnf) "
                  "Trap();  // d, n whole numbers >= 1")
        self.emit("    SyncVS();")
        self.emit("    for (int64_t ri = 0; ri < r; ++ri) {  // each row's index along its dim")
        self.emit(f"        {d.cpp}.SetValue(ri, static_cast<float>(((gr + ri) / pd) % pn));")
        self.emit("    }")
        self.emit("    SyncSV();")
        self.emit("}")
        return d

    def _load_bcast_every(self, e: ir.LoadBcastEvery) -> Val:
        """Column c of every row takes v[(c // d) % numel(v)]: a row the same for every tile, so
        built once per core (on its first tile) into a UB buffer that stays resident - one scalar
        GM read and one Duplicate per run of d columns (runs written last first, each from its
        32 B-aligned floor, as load_every) - and then read like a resident load_bcast row."""
        dtype = self.p.param(e.tensor).dtype
        key = f"resev:{e.tensor}:{repr(_strip_loc(e.arg))}"
        buf = self.queues.get(key)
        if buf is None:
            k = sum(1 for q in self.queues if q.startswith("resev:"))
            buf = Buffer(mangle(f"rev{k}", e.tensor), "res", f"align_up(colElems, 128) * {NBYTES[dtype]}",
                         tensor=e.tensor, dtype=dtype, form="col")
            self.queues[key] = buf
        t = CTYPE[dtype]
        self.counter += 1
        name = mangle(f"ld{self.counter}", e.tensor)
        self.emit(f"LocalTensor<{t}> {name} = {buf.name}.Get<{t}>();")
        self.emit("if (i == 0) {  // this core's first tile: the row stays resident for the rest")
        self._runs_head(e)
        self.emit(f"    const int64_t ga = 32 / sizeof({t});  // elements a 32 B block")
        if dtype in ("f32", "f16", "bf16"):  # Brcb's types
            src = self._bcast_every_source(key, e.tensor, dtype)
            self.emit("    const int64_t nb = (w + ga - 1) / ga;  // the row's 32 B blocks")
            self.emit(f"    if (gd == ga && (nb <= gv || (gv * static_cast<int64_t>(sizeof({t}))) % 32 == 0)) {{")
            self.emit("        // a run is one 32 B block: v copied in (once a period of the row's blocks), then one")
            self.emit("        // Brcb puts value b in block b - no scalar read or Duplicate a run")
            self.emit(f"        LocalTensor<{t}> gsrc = {src.name}.Get<{t}>();")
            self.emit("        for (int64_t b0 = 0; b0 < nb; b0 += gv) {")
            self.emit(f"            CopyRowsIn(gsrc[b0], {mangle('gm', e.tensor)}[0], 1, acx_min(gv, nb - b0), gv, gv);")
            self.emit("        }")
            self.emit("        SetFlag<HardEvent::MTE2_V>(3); WaitFlag<HardEvent::MTE2_V>(3);")
            self.emit(f"        AcxBrcbRows({name}, gsrc, nb);")
            self.emit("    } else {")
            self._runs_fill(e.tensor, t, name, "", "0", "        ")
            self.emit("    }")
        else:
            self._runs_fill(e.tensor, t, name, "", "0", "    ")
        self.emit("}")
        self.emit("}")
        return Val("col", dtype, name, buf, temp=False)

    def _bcast_every_source(self, key: str, tensor: str, dtype: str) -> Buffer:
        """The UB buffer the Brcb path of :meth:`_load_bcast_every` copies v into: one value a
        32 B block of the row (colElems / (32 / size) values), padded to Brcb's 8 a repeat."""
        src = self.queues.get(key + ":src")
        if src is None:
            k = sum(1 for q in self.queues if q.endswith(":src"))
            ga = 32 // NBYTES[dtype]
            src = Buffer(mangle(f"revs{k}", tensor), "res",
                         f"align_up(floor_div(colElems + {ga - 1}, {ga}), 64) * {NBYTES[dtype]}",
                         tensor=tensor, dtype=dtype, form="col")
            self.queues[key + ":src"] = src
        return src

    def _runs_fill(self, tensor: str, t: str, dst: str, off: str, f0: str, ind: str) -> None:
        """The runs of one row of ``w`` elements whose first has flat index ``f0`` (written at
        ``dst[off ...]``), last first:
        element f takes v[(f // gd) % gv] (``_runs_head``'s values), one scalar GM read and one
        Duplicate a run, each from its run's 32 B-aligned floor (``ga`` elements a block; what a
        Duplicate writes before its run belongs to the run before, written next)."""
        self.emit(f"{ind}for (int64_t ce = w; ce > 0;) {{  // the runs, last first")
        self.emit(f"{ind}    const int64_t fl = {f0} + ce - 1, cs = fl - fl % gd > {f0} ? fl - fl % gd - {f0} : 0;")
        self.emit(f"{ind}    const {t} pv = {mangle('gm', tensor)}.GetValue((fl / gd) % gv);")
        self.emit(f"{ind}    const int64_t ca = cs / ga * ga;")
        self.emit(f"{ind}    Duplicate({dst}[{off}ca], pv, static_cast<int32_t>(ce - ca));")
        self.emit(f"{ind}    ce = cs;")
        self.emit(f"{ind}}}")

    def _load_every(self, e: ir.LoadEvery, hint: Val | None, pre) -> Val:
        """v[(f // d) % numel(v)] for each element of flat index f: runs of d elements share a
        value, so per tile row one scalar GM read and one Duplicate per run it meets
        (``_runs_fill``; a vector write starts 32 B-aligned in UB)."""
        dtype = self.p.param(e.tensor).dtype
        d = self._dest("tile", dtype, hint, [], pre)
        t = CTYPE[dtype]
        lw = self._loop_width()
        self._runs_head(e)
        self.emit(f"    const int64_t ga = 32 / sizeof({t});  // elements a 32 B block")
        self.emit("    for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"        const int64_t f0 = (gr + ri) * {lw} + c0;  // the row's first element, flat")
        self._runs_fill(e.tensor, t, d.cpp, "ri * wp + ", "f0", "        ")
        self.emit("    }")
        self.emit("}")
        return d

    def _load_slice(self, e: ir.LoadSlice) -> Val:
        """A column window of ``x``: the tile's rows read ``P`` (x's row pitch) apart in GM from
        column ``col``, one strided copy (DataCopyPad: GM stride in bytes, each row padded to
        32 B in UB) in a queue of its own, so two windows of one tensor (SwiGLU's halves) are
        live together whatever the queue depth. Pitch and column are int64 tiling fields the
        host checks (a whole number, the window inside x's rows)."""
        dtype = self.p.param(e.tensor).dtype
        key = (e.tensor, repr(_strip_loc(e.arg)))
        k = next((i for i, s in enumerate(self.slices) if (s[2], repr(_strip_loc(s[3]))) == key), None)
        if k is None:
            k = len(self.slices)
            self.slices.append((mangle(f"slc{k}", e.tensor), mangle("slp", e.tensor), e.tensor, e.arg))
        col, pitch = (f"td_.{f}" for f in self.slices[k][:2])
        self.roles[e.tensor] = "slice_src"
        qkey = f"slice{k}:{e.tensor}"
        q = self.queues.get(qkey)
        if q is None:
            elems = "align_up(tileElems, 128)"
            q = Buffer(mangle(f"slq{k}", e.tensor), "inq", f"{elems} * {NBYTES[dtype]}", slots=0,
                       tensor=e.tensor, dtype=dtype, form="tile")
            self.queues[qkey] = q
        self.counter += 1
        name = mangle(f"sl{self.counter}", e.tensor)
        t = CTYPE[dtype]
        gm = mangle("gm", e.tensor)
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
        if self.loop.kind == "tiles":
            self.emit(f"CopyRowsIn({name}, {gm}[{col} + g], 1, cnt, cnt, cnt);  // a window of one row")
        else:
            self.emit(f"CopyRowsIn({name}, {gm}[gr * {pitch} + {col} + c0], r, w, {pitch}, wp);  "
                      "// column window, rows the pitch apart")
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")
        return Val("tile", dtype, name, q, temp=True)

    def _index_add_rows(self, e: ir.IndexAddRows, loop_var: str, hint: Val | None, pre) -> Val:
        """acc plus the src rows whose index names each of the tile's rows, in ascending k:
        every result row is summed by the one core that owns it, in one fixed order (no
        atomics); each row reads all K indices (scalar GM reads) and stages each matching src
        row with one DataCopy, added on the vector unit."""
        a = self._expr(e.arg, loop_var)
        d = self._dest("tile", "f32", hint, [a], pre)
        if not _same_storage(d, a):
            self._copy(d, a)
        self._done([a], d)
        self.roles[e.index] = "gather_index"
        self.roles[e.tensor] = "gather_src"
        k = self._gather_field(mangle("gk", e.index), ir.Numel(e.loc, e.index))
        b = self._gather_field(f"{mangle('gb', self.loop.tensor)}_{e.dim}", ir.Numel(e.loc, self.loop.tensor, e.dim))
        self._gather_field(mangle("gn", e.tensor), ir.Numel(e.loc, e.tensor))
        q = self._queue(e.tensor, "inq", "tile")
        self.counter += 1
        st = mangle(f"sca{self.counter}", e.tensor)
        self.emit("for (int64_t ri = 0; ri < r; ++ri) {  // this core's result rows, one at a time")
        self.emit(f"    const int64_t gk = {k}, gb = {b};")
        self.emit("    const int64_t go = (gr + ri) / gb, gi = (gr + ri) % gb;")
        self.emit("    for (int64_t kk = 0; kk < gk; ++kk) {  // every index, in order")
        self.emit(f"        const int64_t ix = static_cast<int64_t>({mangle('gm', e.index)}.GetValue(kk));")
        self.emit("        if (ix < 0 || ix >= gb) Trap();  // an index outside the dim added into")
        self.emit("        if (ix != gi) continue;")
        self.emit(f"        LocalTensor<float> {st} = {q.name}.AllocTensor<float>();")
        self.emit(f"        CopyRowsIn({st}, {mangle('gm', e.tensor)}[(go * gk + kk) * td_.W + c0], 1, w, td_.W, wp);")
        self.emit(f"        {q.name}.EnQue({st});")
        self.emit(f"        {st} = {q.name}.DeQue<float>();")
        self.emit(f"        Add({d.cpp}[ri * wp], {d.cpp}[ri * wp], {st}, static_cast<int32_t>(w));")
        self.emit(f"        {q.name}.FreeTensor({st});")
        self.emit("    }")
        self.emit("}")
        return d

    def _finish(self, v: Val, hint: Val | None, pre) -> Val:
        if hint is None:
            return v
        if pre is not None:
            pre()
        self._copy(hint, v)
        self._release(v)
        return hint

    def _copy(self, dst: Val, src: Val) -> None:
        n = self._count(dst)
        self.emit(f"DataCopy({dst.cpp}, {src.cpp}, acx_align_up({n}, {32 // NBYTES[dst.dtype]}));")

    def _cast(self, a: Val, dtype: str, hint: Val | None, pre) -> Val:
        if a.dtype == dtype:
            return self._finish(a, hint, pre) if hint is not None else a
        if dtype == "bool" and a.form == "tile":
            return self._cast(self._nonzero(a), "u8", hint, pre)
        if a.dtype in ("u8", "i8", "bool") and dtype != "f16" or dtype == "u8" and a.dtype != "f16":
            mid = self._cast(a, "f16", None, None)  # bytes convert to and from f16 only
            return self._cast(mid, dtype, hint, pre)
        if NBYTES[a.dtype] == NBYTES[dtype] and hint is None and a.temp and a.buf and a.buf.kind != "inq":
            d = self._new(a.form, dtype, a.size)  # casting in place between same-size types is not allowed
        else:
            d = self._dest(a.form, dtype, hint, [], pre, a.size)
        if dtype in ("f16", "bf16") and a.dtype == "f32" or a.dtype == "i64" and dtype == "f32":
            mode = "CAST_RINT"  # int64 -> fp32 takes no CAST_NONE; RINT rounds as torch's .float()
        elif dtype in ("i32", "i64"):
            mode = "CAST_TRUNC"
        else:
            mode = "CAST_NONE"
        self.emit(f"Cast({d.cpp}, {a.cpp}, RoundMode::{mode}, {self._count(a)});")
        self._done([a], d)
        return d

    def _nonzero(self, a: Val) -> Val:
        """1.0 where a tile is not 0 (NaN included), else 0.0, in its own dtype: what a bool
        holds (compared before any narrowing, so 1e-8 in f32 stays true)."""
        ct, full = CTYPE[a.dtype], f"acx_align_up(cnt, {256 // NBYTES[a.dtype]})"
        ones = self._new("tile", a.dtype)
        self.emit(f"Duplicate({ones.cpp}, static_cast<{ct}>(1.0f), cnt);")
        mask, m = self._mask()
        self.emit(f"CompareScalar({m}, {a.cpp}, static_cast<{ct}>(0.0f), CMPMODE::NE, {full});")
        self.emit(f"Select({ones.cpp}, {m}, {ones.cpp}, static_cast<{ct}>(0.0f), "
                  f"SELMODE::VSEL_TENSOR_SCALAR_MODE, {full});")
        self.pools["mask"].put(mask)
        self._done([a], ones)
        return ones

    def _power(self, a: Val, n: int, hint: Val | None, pre) -> Val:
        """a ** n (n = 2..4) from one evaluation of a: a*a, (a*a)*a, or (a*a)*(a*a)."""
        cnt = self._count(a)
        if n == 2:
            d = self._dest(a.form, a.dtype, hint, [a], pre)
            self.emit(f"Mul({d.cpp}, {a.cpp}, {a.cpp}, {cnt});")
            self._done([a], d)
            return d
        # a*a goes to a fresh buffer when a is still needed (n = 3), else may reuse a
        sq = self._new(a.form, a.dtype, a.size) if n == 3 else self._dest(a.form, a.dtype, None, [a])
        self.emit(f"Mul({sq.cpp}, {a.cpp}, {a.cpp}, {cnt});")
        if n == 4:
            self._done([a], sq)
        d = self._dest(a.form, a.dtype, hint, [sq], pre)
        self.emit(f"Mul({d.cpp}, {sq.cpp}, {a.cpp if n == 3 else sq.cpp}, {cnt});")
        self._done([sq, a] if n == 3 else [sq], d)
        return d

    def _unary(self, op: str, a: Val, hint: Val | None, pre) -> Val:
        n = self._count(a)
        ct = a.ctype
        if op in VEC1:
            d = self._dest(a.form, a.dtype, hint, [a], pre)
            self.emit(f"{VEC1[op]}({d.cpp}, {a.cpp}, {n});")
        elif op == "neg":
            d = self._dest(a.form, a.dtype, hint, [a], pre)
            self.emit(f"Muls({d.cpp}, {a.cpp}, static_cast<{ct}>(-1.0f), {n});")
        elif op in ("sigmoid", "tanh"):
            d = self._dest(a.form, a.dtype, hint, [a], pre)
            for line in vector_ops.logistic(op, d.cpp, a.cpp, n, lambda v: f"static_cast<{ct}>({cconst(v)})"):
                self.emit(line)
        elif op == "erf":
            d = self._erf(a, hint, pre)
        elif op == "silu":  # in a buffer of its own: x is read again at the end
            s = self._new(a.form, a.dtype, a.size)
            for line in vector_ops.logistic(op, s.cpp, a.cpp, n, lambda v: f"static_cast<{ct}>({cconst(v)})"):
                self.emit(line)
            d = self._finish(s, hint, pre)
        elif op == "gelu":
            d = self._gelu(a, hint, pre)
        else:
            raise DslError(f"no lowering for {op}")
        self._done([a], d)
        return d

    def _gelu(self, x: Val, hint: Val | None, pre) -> Val:
        """x Phi(x) = relu(x) - 0.5 |x| q(|x| / sqrt 2), where q(u) = 1 - erf(u) >= 0 is the
        tail of A&S 7.1.26: no 1 + erf(x) cancellation for x << 0 and no compare/select."""
        n = self._count(x)
        c = lambda v: f"static_cast<{x.ctype}>({cconst(v)})"  # noqa: E731
        u = self._new(x.form, x.dtype, x.size)
        t = self._new(x.form, x.dtype, x.size)
        q = self._new(x.form, x.dtype, x.size)
        self.emit(f"Abs({u.cpp}, {x.cpp}, {n});  // gelu")
        self.emit(f"Muls({u.cpp}, {u.cpp}, {c(1 / math.sqrt(2.0))}, {n});")
        for line in vector_ops.erf_poly(q.cpp, t.cpp, u.cpp, n, c):
            self.emit(line)
        self.emit(f"Mul({t.cpp}, {u.cpp}, {u.cpp}, {n});")
        self.emit(f"Muls({t.cpp}, {t.cpp}, {c(-1.0)}, {n});")
        self.emit(f"Exp({t.cpp}, {t.cpp}, {n});")
        self.emit(f"Mul({q.cpp}, {q.cpp}, {t.cpp}, {n});  // q(|x| / sqrt 2)")
        self.emit(f"Abs({u.cpp}, {x.cpp}, {n});")
        self.emit(f"Mul({q.cpp}, {q.cpp}, {u.cpp}, {n});")
        self.emit(f"Muls({q.cpp}, {q.cpp}, {c(-0.5)}, {n});")
        self.emit(f"Relu({u.cpp}, {x.cpp}, {n});")
        d = self._dest(x.form, x.dtype, hint, [u], pre)
        self.emit(f"Add({d.cpp}, {q.cpp}, {u.cpp}, {n});")
        for v in (u, t, q):
            if not _same_storage(v, d):
                self._release(v)
        return d

    def _erf(self, x: Val, hint: Val | None, pre) -> Val:
        """erf by Abramowitz & Stegun 7.1.26 on |x|, sign restored with Compare + Select."""
        n = self._count(x)
        ct = x.ctype
        u = self._new(x.form, x.dtype, x.size)
        t = self._new(x.form, x.dtype, x.size)
        q = self._new(x.form, x.dtype, x.size)
        c = lambda v: f"static_cast<{ct}>({cconst(v)})"  # noqa: E731
        self.emit(f"Abs({u.cpp}, {x.cpp}, {n});")
        for line in vector_ops.erf_poly(q.cpp, t.cpp, u.cpp, n, c):
            self.emit(line)
        self.emit(f"Mul({u.cpp}, {u.cpp}, {u.cpp}, {n});")
        self.emit(f"Muls({u.cpp}, {u.cpp}, {c(-1.0)}, {n});")
        self.emit(f"Exp({u.cpp}, {u.cpp}, {n});")
        self.emit(f"Mul({q.cpp}, {q.cpp}, {u.cpp}, {n});")
        self.emit(f"Muls({q.cpp}, {q.cpp}, {c(-1.0)}, {n});")
        self.emit(f"Adds({q.cpp}, {q.cpp}, {c(1.0)}, {n});")  # erf(|x|)
        self.emit(f"Muls({t.cpp}, {q.cpp}, {c(-1.0)}, {n});")  # -erf(|x|)
        mask, m = self._mask()
        full = f"acx_align_up({n}, {256 // NBYTES[x.dtype]})"
        self.emit(f"CompareScalar({m}, {x.cpp}, {c(0.0)}, CMPMODE::LT, {full});")
        d = self._dest(x.form, x.dtype, hint, [u], pre)
        self.emit(f"Select({d.cpp}, {m}, {t.cpp}, {q.cpp}, SELMODE::VSEL_TENSOR_TENSOR_MODE, {full});")
        self.pools["mask"].put(mask)
        for v in (u, t, q):
            if not _same_storage(v, d):
                self._release(v)
        return d

    def _row_reduce(self, op: str, a: Val, hint: Val | None, pre) -> Val:
        """One reduction per row, each written straight to its row's element of the result (a
        reduction's destination needs element alignment only): the vector pipe never waits
        for the scalar unit."""
        self.uses_work = True
        d = self._dest("row", a.dtype, hint, [], pre)
        ct = a.ctype
        self.counter += 1
        work = f"work{self.counter}"
        self.emit(f"LocalTensor<{ct}> {work} = workBuf.Get<{ct}>();")
        if a.dtype == "f32":  # narrow rows: one call a tile; else block reductions + one whole-repeat one a row
            kind = {"sum": 0, "max": 1, "min": 2}[op]
            self.emit(f"AcxRowsReduce<{kind}>({d.cpp}, {a.cpp}, {work}, {work}[td_.workElems], r, w, wp);")
        else:
            extra = ", false" if op != "sum" else ""
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
            self.emit(f"    {REDUCE[op]}<{ct}>({d.cpp}[ri], {a.cpp}[ri * wp], {work}, static_cast<int32_t>(w){extra});")
            self.emit("}")
        self._done([a], d)
        return d

    def _binary(self, op: str, a: Val, b: Val, hint: Val | None, pre) -> Val:
        if a.form == "scalar" and b.form == "scalar":
            raise DslError("binary op on two scalars")
        if b.form == "scalar":
            return self._with_scalar(op, a, b, False, hint, pre)
        if a.form == "scalar":
            return self._with_scalar(op, b, a, True, hint, pre)
        if a.form == b.form and a.size != b.size:
            return self._group_binary(op, a, b, hint, pre)
        if a.form == b.form:
            d = self._dest(a.form, a.dtype, hint, [a, b], pre)
            self.emit(f"{VEC2[op]}({d.cpp}, {a.cpp}, {b.cpp}, {self._count(a)});")
            self._done([a, b], d)
            return d
        tile, other = (a, b) if a.form == "tile" else (b, a)
        swapped = tile is b
        d = self._dest("tile", tile.dtype, hint, [tile], pre)
        ct = tile.ctype
        if other.form == "col":
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
            x, y = (f"{other.cpp}", f"{tile.cpp}[ri * wp]") if swapped else (f"{tile.cpp}[ri * wp]", f"{other.cpp}")
            self.emit(f"    {VEC2[op]}({d.cpp}[ri * wp], {x}, {y}, w);")
            self.emit("}")
        elif self._applies_on_vector(op, tile.dtype, other) and other.cpp not in self.hoisted:
            self._row_apply(op, d, tile, other, swapped)
        else:  # row: one scalar per row, read on the scalar unit (or read once per tile before a chunks loop)
            held = self.hoisted.get(other.cpp)
            dual = held is not None and self._applies_on_vector(op, tile.dtype, other) and \
                (other.cpp, op == "div" and not swapped) in self.row_blocks
            if dual:  # the tiling chose blocks or scalars for this shape (see _hoist_row_scalars)
                self.emit("if (td_.rowBlocks) {")
                self.indent += 1
                self._row_apply(op, d, tile, other, swapped)
                self.indent -= 1
                self.emit("} else {")
                self.indent += 1
            if held is None:
                self.emit("SyncVS();")
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
            self.emit(f"    const float s = {held}[ri];" if held else
                      f"    const float s = static_cast<float>({other.cpp}.GetValue(ri));")
            self._scalar_op(op, f"{d.cpp}[ri * wp]", f"{tile.cpp}[ri * wp]", "s", ct, swapped, "w", "    ")
            self.emit("}")
            if dual:
                self.indent -= 1
                self.emit("}")
        self._done([a, b], d)
        return d

    @staticmethod
    def _applies_on_vector(op: str, tile_dtype: str, row: Val) -> bool:
        """Whether ``tile (op) row`` runs as Brcb + a repeat-form op (same dtype, f32/f16)."""
        return op in ROW_APPLY_OP and row.dtype == tile_dtype and tile_dtype in ("f32", "f16") and row.size == 1

    def _row_block_of(self, row: Val, reciprocal: bool) -> tuple[str, Buffer | None]:
        """The 32 B blocks holding ``row`` (or 1 / ``row``): hoisted before a chunks loop, or
        made here (the buffer is then the caller's to give back)."""
        held = self.row_blocks.get((row.cpp, reciprocal))
        if held is not None:
            return held[0], None
        return self._make_row_block(row, reciprocal)

    def _make_row_block(self, row: Val, reciprocal: bool, guard: str = "") -> tuple[str, Buffer]:
        """Brcb of ``row`` (or of its reciprocal) into a fresh bc buffer; with ``guard`` the
        instructions run only where that runtime condition holds (the tensor is declared outside)."""
        buf = self.pools["bc"].get()
        self.counter += 1
        bc = f"bc{self.counter}"
        self.emit(f"LocalTensor<{row.ctype}> {bc} = {buf.name}.Get<{row.ctype}>();")
        if guard:
            self.emit(f"if ({guard}) {{")
            self.indent += 1
        inv = None
        if reciprocal:  # x * (1 / s): the reciprocal of r values, not of the tile
            inv = self._new("row", row.dtype)
            self.emit(f"Reciprocal({inv.cpp}, {row.cpp}, r);")
            row = inv
        self.emit(f"AcxBrcbRows({bc}, {row.cpp}, r);")
        if inv is not None:
            self._release(inv)
        if guard:
            self.indent -= 1
            self.emit("}")
        return bc, buf

    def _hoist_row_blocks(self, rows: list[tuple[Val, bool]], guard: str = "") -> None:
        """Row values a chunks loop applies to its chunks, put in 32 B blocks once per rows tile
        (where ``guard`` holds at run time)."""
        if not rows:
            return
        self.row_blocks = dict(self.row_blocks)
        for row, reciprocal in rows:
            if (row.cpp, reciprocal) not in self.row_blocks:
                self.row_blocks[(row.cpp, reciprocal)] = self._make_row_block(row, reciprocal, guard)

    def _drop_row_blocks(self, outer: dict) -> None:
        """At a chunks loop's end: its hoisted blocks' buffers go back to the pool."""
        for key, (_, buf) in self.row_blocks.items():
            if key not in outer:
                self.pools["bc"].put(buf)
        self.row_blocks = outer

    def _row_apply(self, op: str, d: Val, tile: Val, row: Val, row_first: bool) -> None:
        """``d = tile (op) row`` (``row (op) tile`` when ``row_first``) on the vector pipe alone:
        Brcb puts each row's value in a 32 B block, then repeat-form ops read that block with
        block stride 0 across the row (``AcxRowApply``) - no V->S sync, no scalar per row. The
        rounding is the scalar path's: ``x / s`` is ``x * (1 / s)``, ``s / x`` is ``(1 / x) * s``."""
        src = tile
        bc, buf = self._row_block_of(row, op == "div" and not row_first)
        if op == "div" and not row_first:  # x * (1 / s)
            op = "mul"
        elif op == "div":  # (1 / x) * s
            self.emit(f"Reciprocal({d.cpp}, {tile.cpp}, cnt);")
            src, op, row_first = d, "mul", False
        self.emit(f"AcxRowApply<{ROW_APPLY_OP[op]}, {'true' if row_first else 'false'}>"
                  f"({d.cpp}, {src.cpp}, {bc}, r, w, wp);")
        if buf is not None:
            self.pools["bc"].put(buf)

    def _with_scalar(self, op: str, v: Val, s: Val, scalar_first: bool, hint, pre) -> Val:
        d = self._dest(v.form, v.dtype, hint, [v], pre)
        self._scalar_op(op, d.cpp, v.cpp, f"static_cast<float>({s.cpp})", v.ctype, scalar_first,
                        self._count(v), "")
        self._done([v], d)
        return d

    def _scalar_op(self, op: str, dst: str, src: str, s: str, ct: str, scalar_first: bool, n: str,
                   ind: str) -> None:
        """dst = src (op) s, or s (op) src when scalar_first; s is a float C++ expression."""
        for line in vector_ops.scalar_op(op, dst, src, s, scalar_first, n, lambda x: f"static_cast<{ct}>({x})"):
            self.emit(ind + line)

    def _select(self, e: ir.Select, loop_var: str, hint, pre) -> Val:
        cond = e.cond
        assert isinstance(cond, ir.Compare)
        a = self._expr(cond.lhs, loop_var)
        b = self._expr(cond.rhs, loop_var)
        op = cond.op
        if a.form == "scalar":
            a, b, op = b, a, CMP_SWAP[op]
        x = self._expr(e.if_true, loop_var)
        y = self._expr(e.if_false, loop_var)
        dtype = a.dtype
        ct = CTYPE[dtype]
        form = "row" if "row" in {v.form for v in (a, b, x, y)} else "tile"  # per-row values compared
        n = self._count(form)
        full = f"acx_align_up({n}, {256 // NBYTES[dtype]})"
        if x.form == "scalar" and y.form != "scalar":
            x, y, op = y, x, CMP_INVERSE[op]
        mask, m = self._mask()
        if b.form == "scalar":
            self.emit(f"CompareScalar({m}, {a.cpp}, static_cast<{ct}>({b.cpp}), CMPMODE::{CMP[op]}, {full});")
        else:
            self.emit(f"Compare({m}, {a.cpp}, {b.cpp}, CMPMODE::{CMP[op]}, {full});")
        if x.form == "scalar":  # both constants: materialise the true value
            tv = self._new(form, dtype)
            self.emit(f"Duplicate({tv.cpp}, static_cast<{ct}>({x.cpp}), {n});")
            x = tv
        operands = [a, b, x, y]
        d = self._dest(form, dtype, hint, [v for v in (x, y) if v.form != "scalar"], pre)
        if y.form == "scalar":
            self.emit(f"Select({d.cpp}, {m}, {x.cpp}, static_cast<{ct}>({y.cpp}), "
                      f"SELMODE::VSEL_TENSOR_SCALAR_MODE, {full});")
        else:
            self.emit(f"Select({d.cpp}, {m}, {x.cpp}, {y.cpp}, SELMODE::VSEL_TENSOR_TENSOR_MODE, {full});")
        self.pools["mask"].put(mask)
        seen = set()
        for v in operands:
            if v.form != "scalar" and v.temp and not _same_storage(v, d) and v.cpp not in seen:
                seen.add(v.cpp)
                self._release(v)
        return d


def _strip_loc(e: ir.Expr) -> ir.Expr:
    """An expression without its source locations (two spellings of one column share a window)."""
    kw = {f.name: (_strip_loc(v) if isinstance(v := getattr(e, f.name), ir.Expr) else v)
          for f in fields(e) if f.name != "loc"}
    return type(e)(None, **kw)
