"""Expressions of the epilogue generator (``epilogue.py``): one DSL expression of a
``@cube_kernel`` rows stage → AscendC vector calls on f32 UB tensors, with the in-place reuse
of dead temporaries. Tiles are [rows, chunk] with the chunk as row stride; groups of G
per-row values are [G][rpad] (member m of every row contiguous), members are G constants
broadcast over rows. Mixed into ``epilogue._VecGen``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ir
from ..ir import DTYPE_BYTES
from ..names import mangle
from ..parser import DslError
from . import vector_ops
from .compute_ops import CTYPE, REDUCE, VEC1, VEC2


def _f(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        raise DslError("infinite or NaN constants are not supported in the cube DSL")
    r = repr(float(v))
    return f"{r}f" if ("e" in r or "." in r) else f"{r}.0f"


@dataclass
class _V:
    """A value during code generation."""

    form: str  # tile | col | group | members | scalar
    size: int
    ref: str  # LocalTensor expression, or a C++ float expression for scalars
    dtype: str = "f32"
    buf: str | None = None  # pool buffer owned by this (unnamed) value
    k: int = -1  # chunk loop index of tiles / cols
    deps: tuple[str, ...] = ()  # pool buffers to release once the consumer is done


class EpilogueOps:
    """Expression lowering; the generator provides emit, alloc/release/done, queue, tbuf,
    fresh, count, new_like, env, named_buf, dying, loads, hoisted, k, p and the Gather tables."""

    def ev(self, e: ir.Expr, dst: str | None = None) -> _V:
        if isinstance(e, ir.Const):
            return _V("scalar", 1, _f(e.value))
        if isinstance(e, ir.ScalarRef):
            return _V("scalar", 1, f"td_.{mangle('sc', e.name)}")
        if isinstance(e, ir.Extent):
            return _V("scalar", 1, "static_cast<float>(td_.vW)")
        if isinstance(e, ir.Var):
            v = self.env.get(e.name)
            if v is None:
                raise DslError(f"'{e.name}' is not defined here", e.loc)
            own = self.named_buf.get(e.name) if e.name in self.dying else None
            return _V(v.form, v.size, v.ref, v.dtype, own if own == v.ref else None, v.k)
        if isinstance(e, ir.Load):
            return self._load(e)
        if isinstance(e, ir.Cast):
            a = self.ev(e.arg)
            if e.dtype != "f32":
                raise DslError(f"cast(v, {e.dtype}) is only allowed as the value of a store", e.loc)
            if a.dtype == "f32":
                return a
            out = self._dst(a, dst, reuse=False)
            self.emit(f"Cast({out.ref}, {a.ref}, RoundMode::CAST_NONE, static_cast<uint32_t>({self.count(a)}));")
            self.done(a)
            return out
        if isinstance(e, ir.Index):
            a = self.ev(e.arg)
            deps = a.deps + ((a.buf,) if a.buf else ())
            return _V(a.form, e.stop - e.start, f"{a.ref}[{e.start} * td_.rpad]", "f32", None, a.k, deps)
        if isinstance(e, ir.Fill):
            if e.kind == "tile":
                out = self._dst(_V("tile", 1, "", k=self.k), dst, reuse=False)
            else:
                out = self._dst(_V("group", 1, ""), dst, reuse=False)
            self.emit(f"Duplicate({out.ref}, {_f(e.value)}, static_cast<int32_t>({self.count(out)}));")
            return out
        if isinstance(e, ir.RowReduce):
            a = self.ev(e.arg)
            out = self._dst(_V("group", 1, ""), dst, reuse=False)
            work = self.tbuf("tb_work", "wkmax")
            fn = REDUCE[e.op]
            self.emit("{")
            self.emit(f"    LocalTensor<float> work = {work}.Get<float>();")
            self.emit("    for (int64_t j = 0; j < r; ++j)")
            self.emit(f"        {fn}({out.ref}[j], {a.ref}[j * td_.ch{a.k}], work, static_cast<int32_t>(cw));")
            self.emit("}")
            self.done(a)
            return out
        if isinstance(e, ir.Sinkhorn):
            return self._sinkhorn(e, dst)
        if isinstance(e, ir.LeakyRelu):
            a = self.ev(e.arg)
            out = self._dst(a, dst)
            self.emit(f"LeakyRelu({out.ref}, {a.ref}, {_f(e.slope)}, static_cast<int32_t>({self.count(a)}));")
            self._finish(a, out)
            return out
        if isinstance(e, ir.Unary):
            return self._unary(e, dst)
        if isinstance(e, ir.Power):
            return self._power(e, dst)
        if isinstance(e, ir.Binary):
            return self._binary(e, dst)
        raise DslError(f"cannot lower {type(e).__name__}", e.loc)

    def _dst(self, like: _V, dst: str | None, reuse: bool = True) -> _V:
        """Where a result of ``like``'s shape goes: ``dst``, ``like`` itself if it is an owned
        temporary (in place), or a fresh pool buffer."""
        if dst is not None:
            return _V(like.form, like.size, dst, "f32", None, like.k)
        if reuse and like.buf is not None and like.ref == like.buf and not like.deps and like.dtype == "f32":
            return _V(like.form, like.size, like.ref, "f32", like.buf, like.k)
        return self.new_like(like.form, like.size, like.k)

    def _finish(self, a: _V, out: _V) -> None:
        if a.buf is not None and a.buf == out.buf:
            for d in a.deps:
                self.release(d)
            return
        self.done(a)

    def _load(self, e: ir.Load) -> _V:
        if e.mode in ("tile", "bcast"):
            v = self.loads.get((e.tensor, e.mode, e.part))
            if v is None:
                raise DslError("load outside its chunks loop", e.loc)
            return _V(v.form, 1, v.ref, v.dtype, None, v.k)
        dt = self.p.dtype_of(e.tensor)
        T = CTYPE[dt]
        eb = DTYPE_BYTES[dt]
        g = e.size
        out = self.new_like("group", g, -1)
        if e.mode == "members":
            q = self.queue((e.tensor, "members", None, -1), "VECIN", dt, f"align_up({g}, 16) * {eb}")
            m = self.fresh("ldm")
            self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
            self.emit(f"CopyRowsIn({m}, {mangle('gm', e.tensor)}[0], 1, {g}, {g}, {g});")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{T}>();")
            src = m
            if dt != "f32":
                mf = self.tbuf(f"tb_memf{g}", f"align_up({g}, 64) * 4")
                src = self.fresh("mf")
                self.emit(f"LocalTensor<float> {src} = {mf}.Get<float>();")
                self.emit(f"Cast({src}, {m}, RoundMode::CAST_NONE, static_cast<uint32_t>({g}));")
            self.emit("SyncVS();")
            self.emit(f"for (int32_t m = 0; m < {g}; ++m) Duplicate({out.ref}[m * td_.rpad], {src}.GetValue(m), "
                      "static_cast<int32_t>(td_.rpad));  // one constant per member, broadcast over rows")
            self.emit(f"{q.name}.FreeTensor({m});")
            out.form = "members"
            return out
        if e.mode == "cols":
            q = self.queue((e.tensor, "cols", None, -1), "VECIN", dt, f"{g} * rpad * {eb}")
            m = self.fresh("ldc")
            self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
            self.emit(f"CopyRowsIn({m}, {mangle('gm', e.tensor)}[gr], {g}, r, td_.vN, td_.rpad);  // [G, rows] columns of this tile")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{T}>();")
            if self.p.is_workspace(e.tensor):
                x = self.tbuf(f"tb_wsc{g}", f"{g} * rpad * 4")
                self.emit("for (int64_t s = 1; s < td_.splits; ++s) {  // split-K partial results")
                self.emit(f"    LocalTensor<float> wsx = {x}.Get<float>();")
                self.emit(f"    CopyRowsIn(wsx, {mangle('gm', e.tensor)}[s * td_.Bt * td_.M * td_.N + gr], {g}, r, td_.vN, td_.rpad);")
                self.emit("    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);")
                self.emit(f"    Add({m}, {m}, wsx, static_cast<int32_t>({g} * td_.rpad));")
                self.emit("    SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);")
                self.emit("}")
            if dt == "f32":
                self.emit(f"DataCopy({out.ref}, {m}, static_cast<uint32_t>({g} * td_.rpad));")
            else:
                self.emit(f"Cast({out.ref}, {m}, RoundMode::CAST_NONE, static_cast<uint32_t>({g} * td_.rpad));")
            self.emit(f"{q.name}.FreeTensor({m});")
            return out
        # group: [rows, G] row-major in GM -> [G][rpad] through a Gather per member
        q = self.queue((e.tensor, "group", None, -1), "VECIN", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        m = self.fresh("ldg")
        tbl = self._load_table(g, eb)
        self.emit(f"LocalTensor<{T}> {m} = {q.name}.AllocTensor<{T}>();")
        self.emit(f"CopyRowsIn({m}, {mangle('gm', e.tensor)}[gr * {g}], 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.EnQue({m});")
        self.emit(f"{m} = {q.name}.DeQue<{T}>();")
        if dt == "f32":
            self.emit(f"for (int32_t mm = 0; mm < {g}; ++mm) Gather({out.ref}[mm * td_.rpad], {m}, {tbl}, "
                      f"static_cast<uint32_t>(mm * {eb}), static_cast<uint32_t>(r));")
        else:
            raw = self.alloc(("rawgroup", g, dt))
            self.emit(f"for (int32_t mm = 0; mm < {g}; ++mm) Gather({raw}_raw[mm * td_.rpad], {m}, {tbl}, "
                      f"static_cast<uint32_t>(mm * {eb}), static_cast<uint32_t>(r));")
            self.emit(f"Cast({out.ref}, {raw}_raw, RoundMode::CAST_NONE, static_cast<uint32_t>({g} * td_.rpad));")
            self.release(raw)
        self.emit(f"{q.name}.FreeTensor({m});")
        return out

    # ---- powers
    def _power(self, e: ir.Power, dst: str | None) -> _V:
        """x ** n (n = 2..4) from one evaluation of x: x*x, (x*x)*x or (x*x)*(x*x)."""
        a = self.ev(e.base)
        if a.form == "scalar":  # the base once, in a local: nested powers stay linear
            v = self.fresh("pw")
            self.emit(f"const float {v} = {a.ref};")
            return _V("scalar", 1, "(" + " * ".join([v] * e.n) + ")")
        n = f"static_cast<int32_t>({self.count(a)})"
        if e.n == 2:
            out = self._dst(a, dst)
            self.emit(f"Mul({out.ref}, {a.ref}, {a.ref}, {n});  // ** 2")
            self._finish(a, out)
            return out
        sq = self.new_like(a.form, a.size, a.k) if e.n == 3 else self._dst(a, None)
        self.emit(f"Mul({sq.ref}, {a.ref}, {a.ref}, {n});  // ** {e.n}")
        if e.n == 4:
            self._finish(a, sq)
        out = self._dst(sq, dst)
        self.emit(f"Mul({out.ref}, {sq.ref}, {a.ref if e.n == 3 else sq.ref}, {n});")
        self._finish(sq, out)
        if e.n == 3:
            self.done(a)
        return out

    # ---- unary
    def _unary(self, e: ir.Unary, dst: str | None) -> _V:
        a = self.ev(e.arg)
        n = f"static_cast<int32_t>({self.count(a)})"
        op = e.op
        if op in VEC1:
            out = self._dst(a, dst)
            self.emit(f"{VEC1[op]}({out.ref}, {a.ref}, {n});")
            self._finish(a, out)
            return out
        if op == "neg":
            out = self._dst(a, dst)
            self.emit(f"Muls({out.ref}, {a.ref}, -1.0f, {n});")
            self._finish(a, out)
            return out
        if op in ("sigmoid", "silu", "tanh"):
            out = self._dst(a, dst, reuse=op != "silu")
            for line in vector_ops.logistic(op, out.ref, a.ref, n, _f, f"  // {op}"):
                self.emit(line)
            self._finish(a, out)
            return out
        if op in ("gelu", "erf"):
            # q(u) = (a1 t + ... + a5 t^5) exp(-u^2), t = 1 / (1 + p u)  (A&S 7.1.26, |err| <= 1.5e-7)
            # erf(x) = sign(x) (1 - q(|x|)); gelu(x) = relu(x) - 0.5 |x| q(|x| / sqrt 2)
            u = self.new_like(a.form, a.size, a.k)
            tt = self.new_like(a.form, a.size, a.k)
            pz = self.new_like(a.form, a.size, a.k)
            self.emit(f"Abs({u.ref}, {a.ref}, {n});  // {op}")
            if op == "gelu":
                self.emit(f"Muls({u.ref}, {u.ref}, {_f(1 / math.sqrt(2.0))}, {n});")
            for line in vector_ops.erf_poly(pz.ref, tt.ref, u.ref, n, _f):
                self.emit(line)
            self.emit(f"Mul({tt.ref}, {u.ref}, {u.ref}, {n});")
            self.emit(f"Muls({tt.ref}, {tt.ref}, -1.0f, {n});")
            self.emit(f"Exp({tt.ref}, {tt.ref}, {n});")
            self.emit(f"Mul({pz.ref}, {pz.ref}, {tt.ref}, {n});  // q")
            out = self._dst(a, dst, reuse=False)
            if op == "gelu":
                self.emit(f"Abs({u.ref}, {a.ref}, {n});")
                self.emit(f"Mul({pz.ref}, {pz.ref}, {u.ref}, {n});")
                self.emit(f"Muls({pz.ref}, {pz.ref}, -0.5f, {n});")
                self.emit(f"Relu({u.ref}, {a.ref}, {n});")
                self.emit(f"Add({out.ref}, {pz.ref}, {u.ref}, {n});")
            else:
                self.emit(f"Muls({pz.ref}, {pz.ref}, -1.0f, {n});")
                self.emit(f"Adds({pz.ref}, {pz.ref}, 1.0f, {n});  // 1 - q")
                self.emit(f"Adds({tt.ref}, {u.ref}, 1e-30f, {n});")
                self.emit(f"Div({tt.ref}, {a.ref}, {tt.ref}, {n});  // sign(x)")
                self.emit(f"Mul({out.ref}, {pz.ref}, {tt.ref}, {n});")
            for b in (u, tt, pz):
                self.release(b.buf)
            self.done(a)
            return out
        raise DslError(f"cannot lower {op}", e.loc)

    # ---- binary
    def _scalar_op(self, op: str, d: str, x: str, s: str, n: str, scalar_left: bool) -> list[str]:
        return vector_ops.scalar_op(op, d, x, f"static_cast<float>({s})", scalar_left, n, lambda v: v)

    def _binary(self, e: ir.Binary, dst: str | None) -> _V:
        a = self.ev(e.lhs)
        b = a if e.rhs is e.lhs else self.ev(e.rhs)  # x ** 2: one operand node, evaluated once
        op = e.op
        fa, fb = a.form, b.form
        # scalar operand
        if "scalar" in (fa, fb):
            x, s = (b, a) if fa == "scalar" else (a, b)
            out = self._dst(x, dst)
            n = f"static_cast<int32_t>({self.count(x)})"
            for line in self._scalar_op(op, out.ref, x.ref, s.ref, n, fa == "scalar"):
                self.emit(line)
            self._finish(x, out)
            return out
        shape = {fa, fb}
        if fa == fb and (fa != "group" or a.size == b.size) or shape == {"group", "members"} and a.size == b.size:
            big = a if a.size >= b.size else b
            if fa == "col" and fb == "col":
                raise DslError("two broadcast rows make no tile", e.loc)
            out = self._dst(a, dst) if a.buf else self._dst(b, dst)
            self.emit(f"{VEC2[op]}({out.ref}, {a.ref}, {b.ref}, static_cast<int32_t>({self.count(big)}));")
            self._finish2(a, b, out)
            if fa == "members" and fb == "members":
                out.form = "members"
            elif "group" in shape:
                out.form = "group"
            return out
        if shape <= {"group", "members"}:  # a group of G with one value per row (broadcast over members)
            big, one = (a, b) if a.size >= b.size else (b, a)
            out = self._dst(big, dst)
            out.form = "group"
            for m in range(big.size):
                lhs = f"{a.ref}[{m} * td_.rpad]" if a is big else a.ref
                rhs = f"{b.ref}[{m} * td_.rpad]" if b is big else b.ref
                self.emit(f"{VEC2[op]}({out.ref}[{m} * td_.rpad], {lhs}, {rhs}, static_cast<int32_t>(td_.rpad));")
            self._finish2(a, b, out)
            return out
        if shape == {"tile", "col"}:
            t_, c_ = (a, b) if fa == "tile" else (b, a)
            out = self._dst(t_, dst)
            k = t_.k
            lhs = f"{a.ref}[j * td_.ch{k}]" if a is t_ else a.ref
            rhs = f"{b.ref}[j * td_.ch{k}]" if b is t_ else b.ref
            self.emit("for (int64_t j = 0; j < r; ++j)  // one row vector broadcast over the rows")
            self.emit(f"    {VEC2[op]}({out.ref}[j * td_.ch{k}], {lhs}, {rhs}, static_cast<int32_t>(cw));")
            self._finish2(a, b, out)
            return out
        if shape == {"tile", "group"}:
            t_, g_ = (a, b) if fa == "tile" else (b, a)
            out = self._dst(t_, dst)
            k = t_.k
            arr = self.hoisted.get(g_.ref)
            if arr is None:
                self.emit("SyncVS();")
            self.emit("for (int64_t j = 0; j < r; ++j) {  // one value per row")
            self.emit(f"    const float sv = {arr + '[j]' if arr else g_.ref + '.GetValue(j)'};")
            for line in self._scalar_op(op, f"{out.ref}[j * td_.ch{k}]", f"{t_.ref}[j * td_.ch{k}]", "sv",
                                        "static_cast<int32_t>(cw)", fa == "group"):
                self.emit("    " + line)
            self.emit("}")
            self._finish2(a, b, out)
            return out
        raise DslError(f"cannot combine {fa} and {fb}", e.loc)

    def _finish2(self, a: _V, b: _V, out: _V) -> None:
        for x in (a, b):
            if x.buf is not None and x.buf == out.buf:
                for d in x.deps:
                    self.release(d)
            else:
                self.done(x)

    # ---- Sinkhorn-Knopp
    def _sinkhorn(self, e: ir.Sinkhorn, dst: str | None) -> _V:
        a = self.ev(e.arg)
        n = e.n
        if a.buf is not None and a.ref == a.buf and not a.deps:
            m = _V("group", n * n, a.ref, "f32", a.buf)
        else:
            m = self.new_like("group", n * n, -1)
            self.emit(f"DataCopy({m.ref}, {a.ref}, static_cast<uint32_t>({n * n} * td_.rpad));")
            self.done(a)
        s = self.new_like("group", n, -1)
        R = "static_cast<int32_t>(td_.rpad)"

        def mem(t: _V, i: int) -> str:
            return f"{t.ref}[{i} * td_.rpad]"

        self.emit(f"for (int32_t iter = 0; iter < {e.iters}; ++iter) {{  // Sinkhorn-Knopp, {n} x {n} per row")
        for axis in ("row", "col"):
            for i in range(n):
                idx = [(i * n + j) if axis == "row" else (j * n + i) for j in range(n)]
                if n == 1:
                    self.emit(f"    DataCopy({mem(s, i)}, {mem(m, idx[0])}, static_cast<uint32_t>(td_.rpad));")
                else:
                    self.emit(f"    Add({mem(s, i)}, {mem(m, idx[0])}, {mem(m, idx[1])}, {R});")
                    for j in idx[2:]:
                        self.emit(f"    Add({mem(s, i)}, {mem(s, i)}, {mem(m, j)}, {R});")
            for i in range(n):
                for j in range(n):
                    cell = i * n + j
                    den = i if axis == "row" else j
                    self.emit(f"    Div({mem(m, cell)}, {mem(m, cell)}, {mem(s, den)}, {R});")
        self.emit("}")
        self.release(s.buf)
        if dst is not None:
            self.emit(f"DataCopy({dst}, {m.ref}, static_cast<uint32_t>({n * n} * td_.rpad));")
            self.release(m.buf)
            return _V("group", n * n, dst)
        return m
