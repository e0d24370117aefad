"""Blocked online log-sum-exp steps (``slabs(x, dim=d, rows=R, block_max=True)``): one max a
block of R steps instead of one rescale an element.

The online form ``mn = maximum(m, a); s = s * exp(m - mn) + exp(a - mn); m = mn`` lowered
elementwise over a block's R partial rows costs Max, Sub, Exp, Mul, Sub, Exp, Add and a copy
per element (the vector pipe saturates before HBM does: modeled, model 2.1, logsumexp over
axis 1 of 64 x 4096 x 1023 fp32, flat reads, 99% vector busy). With the block's max ``b``
over its R rows, ``mn = max(m, b)`` is one row, the running sum is rescaled once a block
(``s * exp(m - mn)``, one row) and every element costs a Max (the block max, a tree over the
rows), a Sub (``a - mn``, the row broadcast row by row), an Exp and an Add (the block's sum,
a tree over the rows): the same sum ``Σ exp(x - M)`` with every exponent <= 0, because the
online identity holds for any partition of the steps (blocks here, single steps in the
elementwise form). ``m``, ``s`` and every value outside the steps are one row (the tile's
``cnt`` is ``cntp``), so only the step's kb rows take stepRows-row buffers (the ``blk``
pool): more steps a block fit UB than in the elementwise form, whose accumulators and
output are stepRows rows each. The loop body must be exactly that online form (what
``search.onepass.online_logsumexp`` writes), after any temporaries of the step. Mixed into
``compute._Compute``.
"""

from __future__ import annotations

from .. import ir
from ..errors import DslError
from .compute_ops import CTYPE, Val
from .step_folds import _is_var, _rescaled_sum


def _online_lse(s: ir.InnerLoop) -> tuple[list[ir.Stmt], str, str, str, str] | None:
    """(the step's leading statements, a, mn, m, s) of a body ending in the online form."""
    body = list(s.body)
    if len(body) < 4 or not all(isinstance(x, ir.Assign) for x in body[-3:]):
        return None
    st_mn, st_s, st_m = body[-3:]
    v, m = st_mn.value, st_m.target
    if not (isinstance(v, ir.Binary) and v.op == "max" and isinstance(v.lhs, ir.Var) and isinstance(v.rhs, ir.Var)
            and m in (v.lhs.name, v.rhs.name)):
        return None
    a = v.rhs.name if v.lhs.name == m else v.lhs.name
    if not (isinstance(st_m.value, ir.Var) and st_m.value.name == st_mn.target):
        return None
    if _rescaled_sum(st_s.value, st_s.target, {st_mn.target: v}) != (m, st_mn.target):
        return None
    x = st_s.value
    term = x.rhs if isinstance(x.lhs, ir.Binary) and x.lhs.op == "mul" else x.lhs
    if not (isinstance(term, ir.Unary) and term.op == "exp" and isinstance(term.arg, ir.Binary)
            and term.arg.op == "sub" and _is_var(term.arg.lhs, a) and _is_var(term.arg.rhs, st_mn.target)):
        return None
    if a in (m, st_s.target):
        return None
    return body[:-3], a, st_mn.target, m, st_s.target


STEP_EXPRS = (ir.Load, ir.Cast, ir.Binary, ir.Unary, ir.Const, ir.Var)  # what the step's own values may be
STEP_UNARY = {"exp", "log", "abs", "sqrt", "rsqrt", "reciprocal", "relu", "neg"}  # one instruction, no mask
STEP_BINARY = {"add", "sub", "mul", "div", "max", "min"}


def _step_values_ok(lead: list[ir.Stmt], step_var: str) -> bool:
    """Whether the step's statements are assignments of elementwise arithmetic on loads at the
    step and each other: under block_max a value of the slab is one row (an op with the step's
    kb rows cannot take it) and only the step's values have kb-row buffers (no masks, no
    reduction scratch of that size)."""
    known: set[str] = set()
    for st in lead:
        if not isinstance(st, ir.Assign):
            return False
        for x in ir.walk_exprs(st.value):
            if not isinstance(x, STEP_EXPRS) or (isinstance(x, ir.Var) and x.name not in known) or (
                    isinstance(x, ir.Load) and (x.at != step_var or x.mode != "tile")) or (
                    isinstance(x, ir.Unary) and x.op not in STEP_UNARY) or (
                    isinstance(x, ir.Binary) and x.op not in STEP_BINARY) or (
                    isinstance(x, ir.Cast) and x.dtype not in ("f32", "f16", "bf16")):
                return False
        known.add(st.target)
    return True


class BlockMaxOps:
    """The steps loop of a ``slabs(rows=R, block_max=True)`` loop: the accumulators and
    everything outside the steps are one row (``cnt = cntp``, tileElems = tileLen); the
    step's values, kb rows, take buffers of the ``blk`` pool (stepRows rows)."""

    in_block = False

    def _new(self, form: str, dtype: str, size: int = 1):
        if not (self.in_block and form == "tile" and size == 1):
            return super()._new(form, dtype, size)
        b = self.pools["blk"].get()
        self.counter += 1
        name = f"v{self.counter}"
        self.emit(f"LocalTensor<{CTYPE[dtype]}> {name} = {b.name}.Get<{CTYPE[dtype]}>();")
        return Val(form, dtype, name, b, temp=True)

    def _blockmax_steps(self, s: ir.InnerLoop) -> None:
        found = _online_lse(s)
        if found is None:
            raise DslError("slabs(block_max=True): the steps loop ends in the online log-sum-exp "
                           "(mn = maximum(m, a); s = s * exp(m - mn) + exp(a - mn); m = mn)", s.loc)
        lead, a, mn, m, acc = found
        if not _step_values_ok(lead, s.var):
            raise DslError("slabs(block_max=True): the step's statements before the online form are "
                           "assignments of arithmetic on loads at the step and on each other", s.loc)
        inner = {st.target: self.def_id[id(st)] for st in s.body if isinstance(st, ir.Assign)}
        if inner[m] not in self.carried or inner[acc] not in self.carried or a not in {
                st.target for st in lead}:
            raise DslError("slabs(block_max=True): m and s are accumulators set before the steps "
                           "loop, a a value of the step", s.loc)
        M, S = self.live_defs[self.carried[inner[m]]], self.live_defs[self.carried[inner[acc]]]
        self.emit(f"for (int64_t k0 = {self.k_lo}; k0 < {self.k_hi}; k0 += td_.stepRows) {{  // stepRows steps a block")
        self.indent += 1
        self.emit(f"const int64_t kb = acx_min(td_.stepRows, {self.k_hi} - k0);")
        self.emit("const int64_t cnt = kb * cntp;  // the block's rows")
        self.in_block = True
        self._block(lead, s.var)
        self.in_block = False
        va = self.live_defs[inner[a]]
        if va.dtype != "f32":
            raise DslError("slabs(block_max=True): the step's value is f32 (cast it)", s.loc)
        for st in s.body[-3:]:
            self.emit(f"// DSL line {st.loc.line}: {self._src(st)}")
        self.in_block = True
        bm = self._new("tile", "f32")  # the tree's first level holds kb / 2 rows
        self.in_block = False
        b, x = bm.cpp, va.cpp
        self.emit("{  // the block's max over its kb rows into row 0 (a tree; the rows stay)")
        self.emit("    const int64_t half = kb / 2, keep = kb - half;")
        self.emit(f"    if (half > 0) Max({b}, {x}, {x}[keep * cntp], static_cast<int32_t>(half * cntp));")
        self.emit(f"    if (keep > half) DataCopy({b}[half * cntp], {x}[half * cntp], static_cast<uint32_t>(cntp));")
        self.emit(f"    AcxFoldRowsTo0<ACX_MAX>({b}, keep, cntp);")
        self.emit("}")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Max({b}, {b}, {M.cpp}, static_cast<int32_t>(cntp));  // mn = max(m, block max)")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Sub({M.cpp}, {M.cpp}, {b}, static_cast<int32_t>(cntp));")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Exp({M.cpp}, {M.cpp}, static_cast<int32_t>(cntp));")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Mul({S.cpp}, {S.cpp}, {M.cpp}, static_cast<int32_t>(cntp));  // s rescaled once a block")
        own = va.buf is not None and va.buf.kind == "blk" and self.buf_users.get(self._key(va), 0) == 1
        self.in_block = True
        e = va if own else self._new("tile", "f32")  # a is dead after the step: exp(a - mn) in its place
        self.in_block = False
        self.emit(f"for (int64_t ri = 0; ri < kb; ++ri) Sub({e.cpp}[ri * cntp], {x}[ri * cntp], {b}, "
                  "static_cast<int32_t>(cntp));")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Exp({e.cpp}, {e.cpp}, static_cast<int32_t>(cnt));")
        self.emit(f"AcxFoldRowsTo0<ACX_ADD>({e.cpp}, kb, cntp);")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"Add({S.cpp}, {S.cpp}, {e.cpp}, static_cast<int32_t>(cntp));")
        self.emit(f"DataCopy({M.cpp}, {b}, static_cast<uint32_t>(cntp));  // m = mn")
        self.emit("PipeBarrier<PIPE_V>();")
        self.pools["blk"].put(bm.buf)
        if e is not va:
            self.pools["blk"].put(e.buf)
        for name, v in ((acc, S), (m, M)):  # the updates hold their accumulator's buffer
            self._bind(inner[name], Val(v.form, v.dtype, v.cpp, v.buf, temp=False, origin=v.origin, size=v.size))
        for st in s.body[-3:]:
            self._free_after(self.pos_of_stmt[id(st)])
        self.indent -= 1
        self.emit("}")
