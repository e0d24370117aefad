"""A chunks loop's tile store issued behind the next chunk's loads (a mixin of the compute pass).

Why: the store of chunk k and the load of chunk k + 1 share the core's GM bandwidth. Issued
in loop order (store k, then load k + 1), the load queues behind the whole store, the vector
pipe waits for the load, and the next store waits for the vector pipe: copy-in, compute and
copy-out run one after another instead of overlapping. Here the stored tile is enqueued as
usual, but its copy-out is issued in the next iteration, after the last load that chunk
issues before its store, and once more after the loop for the last chunk (modeled:
layer_norm_2d's output pass 1.66 -> 1.38 us a 32 KiB chunk). With queue depth 1 there is no
second output slot to wait in, so the store is copied out at once as before (``DEPTH`` is a
compile-time constant of the kernel class).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..names import mangle
from .compute_ops import CTYPE, Buffer


@dataclass
class Behind:
    """The deferred store of one chunks loop: its output queue and the C++ name holding the
    column (c0) of the chunk whose copy-out is pending (-1: none)."""

    store: ir.Store
    var: str  # the chunks loop's variable: the loads that count are of its chunk
    col: str
    queue: Buffer
    loads: int  # the chunk's loads up to the store: the copy-out follows the last of them
    flushed: bool = False


class BehindOps:
    """Uses the pass's emit, counter, indent, loop, p, tp, after_cube and _queue."""

    def _plan_behind(self, s: ir.InnerLoop) -> Behind | None:
        """The store to defer in chunks loop ``s``: its one tile store, when the chunk's loads
        come before it (the previous chunk's copy-out is issued after the last of them)."""
        lp = self.loop
        if self.after_cube or lp.kind != "rows" or lp.axis >= 0 or lp.flat or lp.inplace or s.kind != "chunks":
            return None
        stores = [st for st in ir.walk_stmts(s.body) if isinstance(st, ir.Store)]
        if len(stores) != 1 or stores[0] not in s.body or self.tp.type_of(stores[0].value).form != "tile":
            return None
        loads = 0
        for st in s.body[:s.body.index(stores[0]) + 1]:
            loads += sum(isinstance(e, ir.Load) and e.at == s.var for ex in ir.stmt_exprs(st) for e in ir.walk_exprs(ex))
        if not loads:
            return None
        self.counter += 1
        b = Behind(stores[0], s.var, f"pend{self.counter}", self._queue(stores[0].tensor, "outq", "tile"), loads)
        self.emit(f"int64_t {b.col} = -1;  // the chunk whose copy-out waits behind the next chunk's loads")
        return b

    def _copy_out_behind(self, why: str) -> None:
        """If a chunk's store is pending: DeQue it (the oldest stored tile), copy it out at its
        column, free its slot."""
        b = self.behind
        t = CTYPE[self.p.param(b.store.tensor).dtype]
        self.emit(f"if ({b.col} >= 0) {{  // {why}")
        self.indent += 1
        self.emit(f"LocalTensor<{t}> {b.col}o = {b.queue.name}.DeQue<{t}>();")
        self._copy_out(f"{b.col}o", b.col, f"acx_min(td_.chunk, td_.W - {b.col})")
        self.indent -= 1
        self.emit("}")

    def _copy_out(self, tile: str, col: str, width: str) -> None:
        """The dequeued ``tile`` of the chunk at column ``col`` (``width`` columns) to GM, its slot freed."""
        b = self.behind
        self.emit(f"CopyRowsOut({mangle('gm', b.store.tensor)}[gr * td_.W + {col}], {tile}, r, {width}, td_.W, wp);")
        self.emit(f"{b.queue.name}.FreeTensor({tile});")

    def _loaded_behind(self, e: ir.Load) -> None:
        """After each load: once the chunk's last load before its store is issued, the previous
        chunk's copy-out."""
        b = self.behind
        if b is None or b.flushed or e.at != b.var:
            return
        b.loads -= 1
        if b.loads <= 0:
            b.flushed = True
            self._copy_out_behind("the previous chunk's store, behind this chunk's loads")

    def _enqueue_behind(self, name: str, t: str) -> None:
        """The store of this chunk: enqueued; copied out by the next iteration (depth > 1)."""
        b = self.behind
        if not b.flushed:  # a load the count expected was not issued (a cached value)
            b.flushed = True
            self._copy_out_behind("the previous chunk's store")
        q = b.queue
        self.emit(f"{q.name}.EnQue({name});")
        self.emit(f"if (DEPTH > 1) {{ {b.col} = c0; }} else {{")
        self.indent += 1
        self.emit(f"{name} = {q.name}.DeQue<{t}>();")
        self._copy_out(name, "c0", "w")
        self.indent -= 1
        self.emit("}")

    def _close_behind(self) -> None:
        """After the loop: the last chunk's copy-out."""
        self._copy_out_behind("the last chunk's store")
        self.behind = None
