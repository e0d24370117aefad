"""The bound slot of a ``rows(inplace=True)`` loop (a mixin of the compute pass).

The loop tensor's tile is loaded into a slot of a VECIN->VECOUT bound queue (``TQueBind``),
the tile store is computed into that slot and copied out of it, and the slot is freed by the
copy-out (MTE3 -> MTE2 before its next load): one UB buffer a tile instead of an input and an
output one, so a row twice the size double buffers. The vector work on the slot is synced by
explicit flags (MTE2 -> V after the copy-in, V -> MTE3 before the copy-out), as the AscendC
API documents for vector work between a bound queue's EnQue and DeQue.
"""

from __future__ import annotations

from .. import ir
from ..names import mangle
from ..parser import DslError
from .compute_ops import CTYPE, NBYTES, Val


class InplaceOps:
    """Uses the pass's emit, counter, loop, p, tp, roles, _queue, _gm_offset, _row_off, _expr,
    _copy, _copy_in, _release, buf_users, _key and the liveness tables (def_of, last_use,
    pos_of_stmt, cur_stmt, carried)."""

    def _check_inplace(self, loop: ir.Loop) -> None:
        """rows(inplace=True): the tile store is computed into the slot its loop tensor was
        loaded into and copied out of it (a VECIN->VECOUT bound queue), so a tile needs one
        buffer instead of an input and an output one. That holds for whole rows, one load of
        the loop tensor, one tile store as the loop's last statement, no wider than the load."""
        where = "rows(inplace=True)"
        if loop.kind != "rows" or self.after_cube or self.tp.chunked or loop.axis >= 0:
            raise DslError(f"{where} works on whole rows (no chunks loop, no axis=)", loop.loc)
        loads = [e for e in ir.body_exprs(loop.body)
                 if isinstance(e, ir.Load) and e.mode == "tile" and e.tensor == loop.tensor]
        stores = [st for st in ir.walk_stmts(loop.body) if isinstance(st, ir.Store)
                  and self.tp.type_of(st.value).form == "tile"]
        if len(loads) != 1:
            raise DslError(f"{where} loads '{loop.tensor}' once a tile (it has {len(loads)} loads)", loop.loc)
        if len(stores) != 1 or loop.body[-1] is not stores[0]:
            raise DslError(f"{where} ends the loop with its one tile store (the slot is copied out and "
                           "freed there)", loop.loc)
        out, src = self.p.param(stores[0].tensor), self.p.param(loop.tensor)
        if NBYTES[out.dtype] > NBYTES[src.dtype]:
            raise DslError(f"{where}: '{out.name}' ({out.dtype}) is wider than '{src.name}' ({src.dtype}), "
                           "it does not fit the loaded slot", stores[0].loc)

    def _bound_load(self, e: ir.Load, dtype: str) -> Val:
        """The loop tensor's tile into a slot of the bound queue; the vector pipe waits for the
        copy by an explicit MTE2 -> V flag (the queue's own sync is MTE2 -> MTE3)."""
        q = self._queue(e.tensor, "bindq", "tile")
        self.counter += 1
        name = mangle(f"ld{self.counter}", e.tensor)
        t = CTYPE[dtype]
        gm = f"{mangle('gm', e.tensor)}[{self._gm_offset(e.tensor, e.at, e.mode)}]"
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();  // waits for the slot's last copy-out")
        self._copy_in(q, name, t, f"CopyRowsIn({name}, {gm}, r, w, td_.W, wp);", alloc=False)
        self.emit("SetFlag<HardEvent::MTE2_V>(2); WaitFlag<HardEvent::MTE2_V>(2);")
        self.bound = Val("tile", dtype, name, q, temp=True)
        return self.bound

    def _bound_store(self, s: ir.Store, loop_var: str) -> None:
        """The stored value computed into the bound slot (as the output's dtype), the copy-out
        after an explicit V -> MTE3 flag, then the slot freed (MTE3 -> MTE2 for its next load)."""
        out = self.p.param(s.tensor)
        slot = self.bound
        t = CTYPE[out.dtype]
        cpp = slot.cpp
        if out.dtype != slot.dtype:
            self.counter += 1
            cpp = f"o{self.counter}"
            self.emit(f"LocalTensor<{t}> {cpp} = {slot.cpp}.ReinterpretCast<{t}>();")
        dst = Val("tile", out.dtype, cpp, slot.buf, temp=False, origin=slot.cpp)
        v = self._expr(s.value, loop_var, dst)
        if v.buf is not slot.buf or (v.origin or v.cpp) != slot.cpp:
            self._copy(dst, v)
            self._release(v)
        self.roles[s.tensor] = "tile"
        self.emit("SetFlag<HardEvent::V_MTE3>(2); WaitFlag<HardEvent::V_MTE3>(2);")
        self.emit(f"CopyRowsOut({mangle('gm', s.tensor)}[{self._row_off()}], {cpp}, r, w, td_.W, wp);")
        self.emit(f"{slot.buf.name}.FreeTensor({slot.cpp});")

    def _named_tile_dies(self, d: int, v: Val) -> bool:
        """A named tile alone in a pool buffer (not an accumulator): at its last read the op
        reading it may write in place, as into a dead temporary, so ``s2 + row_sum(d * d)``
        needs no second tile buffer. Not a load's queue slot: holding it longer delays the
        next copy-in (cumsum's blocked scan, modeled: 758.0 -> 764.2 us)."""
        if v.form != "tile" or v.buf.kind != "tmp" or self.after_cube:
            return False
        if d in self.carried or d in self.carried.values():
            return False
        return self.buf_users.get(self._key(v), 0) == 1

    def _slot_dies_here(self, e: ir.Var) -> bool:
        """Whether a value is read for the last time by this statement, once (or as both operands
        of one elementwise op): the statement may then write into its buffer (a bound slot is
        overwritten by the store anyway)."""
        d = self.def_of.get(id(e))
        st = getattr(self, "cur_stmt", None)
        if d is None or st is None or self.last_use.get(d) != self.pos_of_stmt.get(id(st)):
            return False
        nodes = [x for ex in ir.stmt_exprs(st) for x in ir.walk_exprs(ex)]
        uses = [x for x in nodes if isinstance(x, ir.Var) and x.name == e.name]
        if len(uses) == 1:
            return True
        # d * d: both operands of one elementwise op, which reads them before it writes
        return len(uses) == 2 and any(isinstance(x, ir.Binary) and x.lhs is uses[0] and x.rhs is uses[1]
                                      for x in nodes)
