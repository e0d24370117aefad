"""The reduced axis cut across cores (``slabs(x, dim=d, rows=R, split=S)``): K in S slices.

A slabs loop's work items are its (A index, tile of B) pairs, so a reduction over a middle axis
with few outer slabs leaves cores idle or unevenly loaded: logsumexp over axis 1 of
64 x 4096 x 1023 fp32 has 64 flat slabs, which take two rounds on 32 or 48 cores alike, and its
exp work keeps the vector pipe of those cores busy (modeled, model 2.1: 99% vector busy on 32
cores). With ``split=S`` an item is one slice of K of one tile: each core runs the steps loop
over its slice, writes the steps loop's accumulators (one row each, fp32) to its slot of the GM
workspace, and after one SyncAll the tiles are shared out again: each reads the S partial rows
of every accumulator, folds them with the op the steps loop folds with (the fold of a fold is
the fold), and runs the statements after the steps loop. A rescaled sum (the online
log-sum-exp's ``s`` relative to its running max ``m``) is merged by rescaling to the global
max: ``M = max(M, m_q); S = S * exp(M_old - M) + s_q * exp(m_q - M)``, every exponent <= 0, so
large inputs do not overflow. The checker (``checker._check_split``) admits only bodies of that
shape. Mixed into ``compute._Compute``.
"""

from __future__ import annotations

from .. import ir
from ..errors import DslError
from .step_blockmax import _online_lse
from .step_folds import blocked_slab_tile, step_folds

FOLD_CALL = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}


def _sync(event: str) -> str:
    return f"SetFlag<HardEvent::{event}>(0); WaitFlag<HardEvent::{event}>(0);"


class SplitKOps:
    """Phase 1 (each slice of K into partial accumulators in GM), SyncAll, phase 2 (the
    partials of each tile folded, then the rest of the loop body)."""

    k_lo, k_hi = "0", "td_.K"  # the steps loops' range of K (phase 1: the item's slice)

    def _split_folds(self, s: ir.InnerLoop) -> list[tuple[int, str, int | None]]:
        """(accumulator def after the steps, fold op, def of the max a rescaled sum is relative to)."""
        inner = {st.target: self.def_id[id(st)] for st in s.body if isinstance(st, ir.Assign)}
        if self.loop.block_max:
            found = _online_lse(s)
            if found is None:
                raise DslError("slabs(block_max=True): the steps loop ends in the online log-sum-exp "
                               "(mn = maximum(m, a); s = s * exp(m - mn) + exp(a - mn); m = mn)", s.loc)
            _, _, _, m, acc = found
            return [(inner[m], "max", None), (inner[acc], "add", inner[m])]
        out = []
        for d, op, rel in step_folds(s, self.def_id, self.carried):
            if op.startswith("arg"):
                raise DslError("slabs(split=...): the index of a running extreme (where(a > m, position(k), "
                               "i)) has no split combine: drop split=", s.loc)
            out.append((d, op, inner[rel] if rel else None))
        return out

    def _split_tile(self, item: str) -> None:
        self.emit(f"    const int64_t a = {item} / td_.blocksPerOuter;")
        self.emit(f"    const int64_t b0 = ({item} % td_.blocksPerOuter) * td_.tileLen;")
        for line in blocked_slab_tile(self.unit, self.loop.block_max):
            self.emit(line)

    def _split_loop(self, loop: ir.Loop) -> None:
        at = next(i for i, s in enumerate(loop.body) if isinstance(s, ir.InnerLoop))
        pre, steps, post = list(loop.body[:at]), loop.body[at], list(loop.body[at + 1:])
        folds = self._split_folds(steps)
        n = len(folds)
        self.split_accs = max(self.split_accs, n)
        self.emit("{  // slabs(split=S), phase 1: each item is one slice of K of one tile")
        self.indent += 1
        self.emit("const int64_t items = td_.baseItems + (core < td_.bigCores ? 1 : 0);")
        self.emit("const int64_t item0 = core * td_.baseItems + acx_min(core, td_.bigCores);")
        self.emit("for (int64_t j = 0; j < items; ++j) {")
        self.emit("    const int64_t it = item0 + j, part = it % td_.splits;")
        self.emit("    const int64_t kLo = part * td_.K / td_.splits, kHi = (part + 1) * td_.K / td_.splits;")
        self._split_tile("(it / td_.splits)")
        self.indent += 1
        self.bound = None
        self.k_lo, self.k_hi = "kLo", "kHi"
        self._block(pre + [steps], loop.var)
        self.k_lo, self.k_hi = "0", "td_.K"
        accs = []
        for d, _, _ in folds:
            v = self.live_defs.get(d)
            if v is None or v.buf is None or v.dtype != "f32":
                raise DslError("slabs(split=...): the steps loop's accumulators are f32 tiles (cast them)", steps.loc)
            accs.append(v)
        self.emit("// this item's partial accumulators (row 0 each) to its slot of the GM workspace")
        self.emit(_sync("V_MTE3"))
        for i, v in enumerate(accs):
            self.emit(f"DataCopy(splitGm[(it * {n} + {i}) * td_.tileLen], {v.cpp}, static_cast<uint32_t>(cntp));")
        self.emit(_sync("MTE3_V"))
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        self.emit("PipeBarrier<PIPE_ALL>();")
        self.emit("SyncAll();  // every slice's partials are in GM")
        self.emit("{  // phase 2: each tile's S partials folded, then the rest of the loop body")
        self.indent += 1
        self.emit("const int64_t outs = td_.baseOut + (core < td_.bigOut ? 1 : 0);")
        self.emit("const int64_t out0 = core * td_.baseOut + acx_min(core, td_.bigOut);")
        self.emit("for (int64_t j = 0; j < outs; ++j) {")
        self.emit("    const int64_t ob = out0 + j;")
        self._split_tile("ob")
        self.indent += 1
        self._split_combine(folds, accs)
        self._block(post, loop.var)
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def _split_combine(self, folds: list[tuple[int, str, int | None]], accs: list) -> None:
        n = len(folds)
        index = {d: i for i, (d, _, _) in enumerate(folds)}

        def slot(i: int, q: str) -> str:
            return f"splitGm[((ob * td_.splits + {q}) * {n} + {i}) * td_.tileLen]"

        cp = "static_cast<int32_t>(cntp)"
        for v in accs:  # phase 1's names went out of scope with its loop: the same UB buffers
            self.emit(f"LocalTensor<float> {v.cpp} = {v.buf.name}.Get<float>();")
        self.emit(_sync("V_MTE2"))
        for i, v in enumerate(accs):
            self.emit(f"DataCopy({v.cpp}, {slot(i, '0')}, static_cast<uint32_t>(cntp));")
        self.emit(_sync("MTE2_V"))
        plain = [i for i, (d, _, rel) in enumerate(folds) if rel is None and not any(r == d for _, _, r in folds)]
        maxes = sorted({index[rel] for _, _, rel in folds if rel is not None})
        t = self._new("tile", "f32")
        self.emit("for (int64_t q = 1; q < td_.splits; ++q) {")
        self.indent += 1
        for i in plain:
            op = folds[i][1]
            self.emit(_sync("V_MTE2"))
            self.emit(f"DataCopy({t.cpp}, {slot(i, 'q')}, static_cast<uint32_t>(cntp));")
            self.emit(_sync("MTE2_V"))
            self.emit(f"{FOLD_CALL[op]}({accs[i].cpp}, {accs[i].cpp}, {t.cpp}, {cp});")
            self.emit("PipeBarrier<PIPE_V>();")
        if maxes:
            mn, em = self._new("tile", "f32"), self._new("tile", "f32")
            for im in maxes:
                big = accs[im].cpp
                self.emit(_sync("V_MTE2"))
                self.emit(f"DataCopy({t.cpp}, {slot(im, 'q')}, static_cast<uint32_t>(cntp));  // m_q")
                self.emit(_sync("MTE2_V"))
                self.emit(f"Max({mn.cpp}, {big}, {t.cpp}, {cp});  // the merged max")
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Sub({big}, {big}, {mn.cpp}, {cp});")
                self.emit(f"Sub({t.cpp}, {t.cpp}, {mn.cpp}, {cp});")
                self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"Exp({big}, {big}, {cp});  // exp(M - max) <= 1")
                self.emit(f"Exp({t.cpp}, {t.cpp}, {cp});  // exp(m_q - max) <= 1")
                for i, (_, _, rel) in enumerate(folds):
                    if rel is None or index[rel] != im:
                        continue
                    s = accs[i].cpp
                    self.emit(_sync("V_MTE2"))
                    self.emit(f"DataCopy({em.cpp}, {slot(i, 'q')}, static_cast<uint32_t>(cntp));  // s_q")
                    self.emit(_sync("MTE2_V"))
                    self.emit(f"Mul({s}, {s}, {big}, {cp});")
                    self.emit(f"Mul({em.cpp}, {em.cpp}, {t.cpp}, {cp});")
                    self.emit("PipeBarrier<PIPE_V>();")
                    self.emit(f"Add({s}, {s}, {em.cpp}, {cp});  // rescaled to the merged max")
                    self.emit("PipeBarrier<PIPE_V>();")
                self.emit(f"DataCopy({big}, {mn.cpp}, static_cast<uint32_t>(cntp));  // M = the merged max")
                self.emit("PipeBarrier<PIPE_V>();")
            self.pools["tmp"].put(mn.buf)
            self.pools["tmp"].put(em.buf)
        self.indent -= 1
        self.emit("}")
        self.pools["tmp"].put(t.buf)
        if not self.loop.block_max:  # every row of a blocked loop's accumulator holds the fold
            for v in accs:
                self.emit(f"AcxRepeatRows({v.cpp}, td_.stepRows, cntp);")
