"""The vector kernel (AIV) of a ``@cube_kernel``'s rows stage (pass 3 of the cube lowering): the
epilogue generator. Tiles of rows and column chunks go through UB queues (``DataCopy``/
``DataCopyPad``); split-K partial results in the workspace are summed on load; groups of
per-row values move between [rows, G] in GM and [G, rows] in UB with ``Gather``; statements
run over one UB pool whose buffers are reused as soon as a value is dead. Its expressions
are in ``epilogue_ops.py``; what it supports is checked by ``support.check_cube_supported``.
"""

from __future__ import annotations

from .. import ir
from ..checker import TypedProgram
from ..ir import DTYPE_BYTES
from ..names import mangle, size_expr
from ..parser import DslError
from .compute_ops import CTYPE
from .cube_tiling import Buf, stores, terms
from .epilogue_ops import _V, EpilogueOps, _f
from .glue import ROW_COPIES, ub_init, ub_members
from .tiling import camel

VEC_PRELUDE = r"""
__aicore__ inline int64_t acx_min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t acx_align_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Scalar reads of UB wait for the vector pipe.
__aicore__ inline void SyncVS() { SetFlag<HardEvent::V_S>(0); WaitFlag<HardEvent::V_S>(0); }
""".strip("\n") + "\n\n" + ROW_COPIES


class _VecGen(EpilogueOps):
    """Generates the AIV kernel of the rows stage and its UB plan."""

    def __init__(self, p: ir.Program, checked: TypedProgram, chunks: list[ir.InnerLoop],
                 vec_tensors: dict[str, bool]):
        self.p = p
        self.ck = checked
        self.v = p.vector
        self.chunks = chunks
        self.vec_tensors = vec_tensors
        self.lines: list[str] = []
        self.ind = 2
        self.bufs: list[Buf] = []  # queues and TBufs, in InitBuffer order
        self.pool_cls: dict[str, tuple] = {}  # pool buffer -> class
        self.free: dict[tuple, list[str]] = {}
        self.queue_of: dict[tuple, Buf] = {}
        self.tables: dict[tuple, str] = {}
        self.init_lines: list[str] = []
        self.scratch_need: list[str] = []
        self.counter = 0
        self.env: dict[str, _V] = {}
        self.named_buf: dict[str, str] = {}
        self.loads: dict[tuple, _V] = {}
        self.k = -1  # current chunk loop index
        self.outer_names: set[str] = set()
        self.hoisted: dict[str, str] = {}
        self.dying: set[str] = set()
        rows = self.v.tile
        self.rows_max = max(p.tunable(rows).domain.values()) if isinstance(rows, str) else int(rows)

    # ------------------------------------------------------------ buffers
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def _class_bytes(self, cls: tuple) -> str:
        kind = cls[0]
        if kind == "tile":
            return f"tileRows * ch{cls[1]} * 4"
        if kind == "col":
            return f"ch{cls[1]} * 4"
        if kind == "group":
            return f"{cls[1]} * rpad * 4"
        if kind == "rawgroup":
            return f"{cls[1]} * rpad * {DTYPE_BYTES[cls[2]]}"
        raise AssertionError(cls)

    def alloc(self, cls: tuple) -> str:
        lst = self.free.setdefault(cls, [])
        if lst:
            return lst.pop()
        if cls[0] in ("tile", "col"):  # borrow a free buffer of another chunks loop, grown to fit
            for other, olst in self.free.items():
                if other[0] == cls[0] and olst:
                    name = olst.pop()
                    need = self._class_bytes(cls)
                    i = next(j for j, b in enumerate(self.bufs) if b.name == f"tb_{name}")
                    b = self.bufs[i]
                    if need not in terms(b.bytes_expr):
                        self.bufs[i] = Buf(b.name, b.pos, f"max({b.bytes_expr}, {need})", b.depth, b.dtype)
                    return name
        name = f"t{len(self.pool_cls)}"
        self.pool_cls[name] = cls
        self.bufs.append(Buf(f"tb_{name}", "VECCALC", self._class_bytes(cls)))
        return name

    def release(self, name: str | None) -> None:
        if name is not None and name not in self.named_buf.values():
            lst = self.free.setdefault(self.pool_cls[name], [])
            if name not in lst:
                lst.append(name)

    def done(self, v: _V) -> None:
        """The consumer of ``v`` has emitted its instruction: release its temporaries."""
        if v.buf is not None:
            self.release(v.buf)
        for d in v.deps:
            self.release(d)

    def queue(self, key: tuple, pos: str, dtype: str, bytes_expr: str) -> Buf:
        if key not in self.queue_of:
            b = Buf(f"q{len(self.queue_of)}", pos, bytes_expr, size_expr(self.v.depth), dtype)
            self.queue_of[key] = b
            self.bufs.append(b)
        b = self.queue_of[key]
        if bytes_expr not in terms(b.bytes_expr):  # shared by several loops: the largest use
            nb = Buf(b.name, b.pos, f"max({b.bytes_expr}, {bytes_expr})", b.depth, b.dtype)
            self.bufs[self.bufs.index(b)] = nb
            self.queue_of[key] = b = nb
        return b

    def tbuf(self, name: str, bytes_expr: str) -> str:
        if not any(b.name == name for b in self.bufs):
            self.bufs.append(Buf(name, "VECCALC", bytes_expr))
        return name

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ------------------------------------------------------------ geometry
    def count(self, v: _V) -> str:
        if v.form == "tile":
            return f"r * td_.ch{v.k}"
        if v.form == "col":
            return f"td_.ch{v.k}"
        return f"{v.size} * td_.rpad"

    def cls_of(self, v: _V) -> tuple:
        if v.form == "tile":
            return ("tile", v.k)
        if v.form == "col":
            return ("col", v.k)
        return ("group", v.size)

    def new_like(self, form: str, size: int, k: int) -> _V:
        v = _V(form, size, "", k=k)
        name = self.alloc(self.cls_of(v))
        v.ref, v.buf = name, name
        return v

    # ------------------------------------------------------------ program
    def run(self) -> None:
        v = self.v
        self.emit("const int64_t core = GetBlockIdx();")
        self.emit("const int64_t myRows = td_.baseRows + (core < td_.bigRows ? 1 : 0);")
        self.emit("const int64_t row0 = core * td_.baseRows + acx_min(core, td_.bigRows);")
        self.emit("for (int64_t it = 0; it < myRows; it += td_.tileRows) {")
        self.ind += 1
        self.emit("const int64_t r = acx_min(td_.tileRows, myRows - it);  // rows in this tile")
        self.emit("const int64_t gr = row0 + it;  // first row of this tile")
        self._block(v.body)
        self.ind -= 1
        self.emit("}")

    def _names_read(self, body) -> set[str]:
        out = set()
        for e in ir.body_exprs(body):
            if isinstance(e, ir.Var):
                out.add(e.name)
        for s in body:
            if isinstance(s, ir.InnerLoop):
                out |= self._assigned(s.body)
        return out

    def _assigned(self, body) -> set[str]:
        return {s.target for s in body if isinstance(s, ir.Assign)}

    def _liveness(self, body) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
        """(free_after, dying): names whose binding is released after statement i, and names
        read exactly once at statement i that are never read again (their buffer may take the
        result in place)."""
        cur: dict[str, int] = {}
        born: dict[int, tuple[str, int]] = {}
        last: dict[int, int] = {}
        once: dict[tuple[int, int], int] = {}
        for i, s in enumerate(body):
            if isinstance(s, ir.InnerLoop):
                reads = {n: 2 for n in self._names_read([s])}
            else:
                reads = {}
                for e in {id(x): x for x in ir.walk_exprs(s.value)}.values():
                    if isinstance(e, ir.Var):
                        reads[e.name] = reads.get(e.name, 0) + 1
            for n, cnt in reads.items():
                if n in cur:
                    last[cur[n]] = i
                    once[(cur[n], i)] = cnt
            if isinstance(s, ir.Assign):
                b = len(born) + 1
                born[b] = (s.target, i)
                cur[s.target] = b
        free_after: dict[int, set[str]] = {}
        dying: dict[int, set[str]] = {}
        for b, (n, i0) in born.items():
            nxt = [i1 for b1, (n1, i1) in born.items() if n1 == n and b1 > b]
            j = last.get(b, i0)
            if b in last and once.get((b, j)) == 1 and not isinstance(body[j], ir.InnerLoop):
                dying.setdefault(j, set()).add(n)
            if not nxt or min(nxt) != j:
                free_after.setdefault(j, set()).add(n)
        return free_after, dying

    def _block(self, body) -> None:
        dead, dying = self._liveness(body)
        local: set[str] = set()
        for i, s in enumerate(body):
            self.emit(f"// DSL line {s.loc.line}")
            self.dying = {n for n in dying.get(i, ()) if n in local and n in self.named_buf}
            if isinstance(s, ir.Assign):
                if not self._assign(s):
                    local.add(s.target)
            elif isinstance(s, ir.Store):
                self._store(s)
            else:
                saved = self.outer_names
                self._chunks(s)
                self.outer_names = saved
            self.dying = set()
            for n in sorted(dead.get(i, ())):
                if n in local and n in self.env:
                    b = self.named_buf.pop(n, None)
                    if b is not None:
                        self.release(b)
                    self.env.pop(n, None)
                    local.discard(n)

    def _bind(self, name: str, val: _V) -> None:
        if val.form == "scalar":
            raise DslError(f"'{name}' would be a scalar")
        if val.buf is None or val.deps:
            # a view, an alias or a read-only load: keep loads as they are (they live for the
            # whole chunk iteration), copy anything else into a buffer of its own
            if val.ref.startswith("ld") and not val.deps:
                self.env[name] = val
                return
            cp = self.new_like(val.form, val.size, val.k)
            self.emit(f"DataCopy({cp.ref}, {val.ref}, static_cast<uint32_t>({self.count(val)}));")
            self.done(val)
            val = cp
        old = self.named_buf.get(name)
        self.named_buf[name] = val.buf
        if old is not None and old != val.buf:
            self.release(old)
        self.env[name] = _V(val.form, val.size, val.ref, val.dtype, None, val.k)

    def _assign(self, s: ir.Assign) -> bool:
        """Emit an assignment; True if it updated a value carried across chunks (accumulator)."""
        acc = self.env.get(s.target)
        carried = acc is not None and self.k >= 0 and s.target in self.outer_names
        if carried:
            val = self.ev(s.value, dst=acc.ref)
            if val.ref != acc.ref:
                self.emit(f"DataCopy({acc.ref}, {val.ref}, static_cast<uint32_t>({self.count(acc)}));")
                self.done(val)
            return True
        val = self.ev(s.value)
        self._bind(s.target, val)
        return False

    # ------------------------------------------------------------ chunks
    def _chunk_index(self, ch: ir.InnerLoop) -> int:
        return next(i for i, c in enumerate(self.chunks) if c is ch)

    def _hoist_row_scalars(self, ch: ir.InnerLoop) -> None:
        """Per-row values from outside the chunks loop that multiply tiles inside it are read
        from UB into scalar registers once per tile (one V->S sync), not once per chunk."""
        changed = self._assigned(ch.body)
        refs: list[str] = []
        for e in ir.body_exprs(ch.body):
            if not isinstance(e, ir.Binary):
                continue
            fa, fb = self.ck.type_of(e.lhs).form, self.ck.type_of(e.rhs).form
            if {fa, fb} != {"tile", "row"}:
                continue
            g = e.lhs if fa == "row" else e.rhs
            base = g.arg if isinstance(g, ir.Index) else g
            if not isinstance(base, ir.Var) or base.name not in self.env or base.name in changed:
                continue
            ref = self.ev(g).ref
            if ref not in refs and ref not in self.hoisted:
                refs.append(ref)
        if not refs:
            return
        rmax = self.rows_max
        self.emit("SyncVS();")
        names = []
        for ref in refs:
            arr = self.fresh("rs")
            self.hoisted[ref] = arr
            names.append((arr, ref))
            self.emit(f"float {arr}[{rmax}];  // one value per row, read once per tile")
        self.emit("for (int64_t j = 0; j < r; ++j) {")
        for arr, ref in names:
            self.emit(f"    {arr}[j] = {ref}.GetValue(j);")
        self.emit("}")

    def _chunks(self, ch: ir.InnerLoop) -> None:
        k = self._chunk_index(ch)
        self.hoisted = {}
        self._hoist_row_scalars(ch)
        self.outer_names = set(self.env)
        self.k = k
        self.emit(f"for (int64_t c0 = 0; c0 < td_.pw{k}; c0 += td_.ch{k}) {{")
        self.ind += 1
        self.emit(f"const int64_t cw = acx_min(td_.ch{k}, td_.pw{k} - c0);  // columns in this chunk")
        keys = []
        for e in ir.body_exprs(ch.body):
            if isinstance(e, ir.Load) and e.mode in ("tile", "bcast"):
                key = (e.tensor, e.mode, e.part)
                if key not in keys:
                    keys.append(key)
        self.loads = {}
        self.load_q: dict[tuple, str] = {}
        self.store_n = 0
        for i, key in enumerate(keys):
            self._issue_chunk_load(key, k, i)
        for key in keys:
            v = self.loads[key]
            self.emit(f"{v.ref} = {self.load_q[key]}.DeQue<{CTYPE[v.dtype]}>();")
        for key in keys:
            if self.p.is_workspace(key[0]):
                self._sum_splits(self.loads[key], key, k)
        before = dict(self.named_buf)
        self._block(ch.body)
        for n in list(self.named_buf):
            if n not in before:
                self.release(self.named_buf.pop(n))
                self.env.pop(n, None)
        for key in keys:
            self.emit(f"{self.load_q[key]}.FreeTensor({self.loads[key].ref});")
        self.loads = {}
        self.ind -= 1
        self.emit("}")
        self.k = -1

    def _gm_off(self, tensor: str, part: int | None, k: int) -> str:
        off = f"gr * td_.{mangle('width', tensor)} + c0"
        if part:
            off += f" + {part} * td_.pw{k}"
        return off

    def _issue_chunk_load(self, key: tuple, k: int, ordinal: int) -> None:
        tensor, mode, part = key
        dt = self.p.dtype_of(tensor)
        eb = DTYPE_BYTES[dt]
        T = CTYPE[dt]
        nbytes = f"tileRows * ch{k} * {eb}" if mode == "tile" else f"ch{k} * {eb}"
        q = self.queue(("in", mode, dt, ordinal), "VECIN", dt, nbytes)
        self.load_q[key] = q.name
        name = self.fresh("ld")
        self.emit(f"LocalTensor<{T}> {name} = {q.name}.AllocTensor<{T}>();")
        if mode == "tile":
            self.emit(f"CopyRowsIn({name}, {mangle('gm', tensor)}[{self._gm_off(tensor, part, k)}], r, cw, td_.{mangle('width', tensor)}, td_.ch{k});")
        else:
            self.emit(f"CopyRowsIn({name}, {mangle('gm', tensor)}[c0], 1, cw, cw, td_.ch{k});")
        self.emit(f"{q.name}.EnQue({name});")
        self.loads[key] = _V("tile" if mode == "tile" else "col", 1, name, dt, None, k)

    def _sum_splits(self, v: _V, key: tuple, k: int) -> None:
        tensor, _, part = key
        x = self.tbuf("tb_wsx", "tileRows * chmax * 4")
        self.emit("for (int64_t s = 1; s < td_.splits; ++s) {  // split-K partial results")
        self.emit(f"    LocalTensor<float> wsx = {x}.Get<float>();")
        self.emit(f"    CopyRowsIn(wsx, {mangle('gm', tensor)}[s * td_.Bt * td_.M * td_.N + {self._gm_off(tensor, part, k)}], r, cw, "
                  f"td_.{mangle('width', tensor)}, td_.ch{k});")
        self.emit("    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);")
        self.emit(f"    Add({v.ref}, {v.ref}, wsx, static_cast<int32_t>(r * td_.ch{k}));")
        self.emit("    SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);")
        self.emit("}")

    # ------------------------------------------------------------ stores
    def _store(self, s: ir.Store) -> None:
        t = self.ck.type_of(s.value)
        dt = self.p.dtype_of(s.tensor)
        T = CTYPE[dt]
        eb = DTYPE_BYTES[dt]
        value = s.value
        if t.form == "tile":
            k = self.k
            q = self.queue(("out", dt, self.store_n), "VECOUT", dt, f"tileRows * ch{k} * {eb}")
            self.store_n += 1
            o = self.fresh("st")
            self.emit(f"LocalTensor<{T}> {o} = {q.name}.AllocTensor<{T}>();")
            self._into(o, dt, value, "tile")
            self.emit(f"{q.name}.EnQue({o});")
            self.emit(f"{o} = {q.name}.DeQue<{T}>();")
            self.emit(f"CopyRowsOut({mangle('gm', s.tensor)}[{self._gm_off(s.tensor, s.part, k)}], {o}, r, cw, td_.{mangle('width', s.tensor)}, "
                      f"td_.ch{k});")
            self.emit(f"{q.name}.FreeTensor({o});")
            return
        # per-row values: [G][rpad] in UB -> [rows, G] in GM through a Gather
        g = t.size
        q = self.queue((s.tensor, "outg", None, -1), "VECOUT", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        if dt == "f32":
            src = self.ev(value)
            raw = src.ref
        else:
            if not isinstance(value, ir.Cast):
                raise DslError(f"a {dt} store needs cast(v, {dt}) at the top of the value", value.loc)
            src = self.ev(value.arg)
            rawname = self.alloc(("rawgroup", g, dt))
            raw = f"{rawname}_raw"
            self.emit(f"Cast({raw}, {src.ref}, RoundMode::CAST_RINT, static_cast<uint32_t>({g} * td_.rpad));")
        tbl = self._store_table(g, eb)
        o = self.fresh("st")
        self.emit(f"LocalTensor<{T}> {o} = {q.name}.AllocTensor<{T}>();")
        self.emit(f"Gather({o}, {raw}, {tbl}, 0, static_cast<uint32_t>(r * {g}));  // [G][rows] -> [rows][G]")
        self.emit(f"{q.name}.EnQue({o});")
        self.emit(f"{o} = {q.name}.DeQue<{T}>();")
        self.emit(f"CopyRowsOut({mangle('gm', s.tensor)}[gr * {g}], {o}, 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.FreeTensor({o});")
        self.done(src)
        if dt != "f32":
            self.release(rawname)

    def _into(self, o: str, dt: str, value: ir.Expr, form: str) -> None:
        """Evaluate ``value`` into the output tensor ``o`` (dtype ``dt``)."""
        if dt == "f32":
            v = self.ev(value, dst=o)
            if v.ref != o:
                self.emit(f"DataCopy({o}, {v.ref}, static_cast<uint32_t>({self.count(v)}));")
                self.done(v)
            return
        if not isinstance(value, ir.Cast):
            raise DslError(f"a {dt} store needs cast(v, {dt}) at the top of the value", value.loc)
        v = self.ev(value.arg)
        self.emit(f"Cast({o}, {v.ref}, RoundMode::CAST_RINT, static_cast<uint32_t>({self.count(v)}));")
        self.done(v)

    def _store_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets for Gather: out[j*G + m] = in[m*rpad + j]."""
        key = ("S", g, eb)
        if key in self.tables:
            return self.tables[key]
        name = f"tblS{g}_{eb}"
        self.tbuf(f"tb_{name}", f"align_up(tileRows * {g}, 64) * 4")
        self.scratch_need.append(f"3 * align_up(tileRows * {g}, 64) * 4")
        n = f"static_cast<int32_t>(td_.tileRows * {g})"
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = tb_{name}.Get<uint32_t>();",
            "{",
            "    LocalTensor<float> f0 = tb_scratch.Get<float>();",
            f"    LocalTensor<float> f1 = f0[(td_.tileRows * {g} + 63) / 64 * 64];",
            f"    LocalTensor<float> f2 = f0[2 * ((td_.tileRows * {g} + 63) / 64 * 64)];",
            f"    LocalTensor<int32_t> ti = tb_{name}.Get<int32_t>();",
            f"    CreateVecIndex(f0, 0.0f, static_cast<uint32_t>({n}));",
            f"    Adds(f1, f0, 0.5f, {n});",
            f"    Muls(f1, f1, {_f(1.0 / g)}, {n});",
            f"    Cast(ti, f1, RoundMode::CAST_FLOOR, static_cast<uint32_t>({n}));  // j = i / G",
            f"    Cast(f1, ti, RoundMode::CAST_NONE, static_cast<uint32_t>({n}));",
            f"    Muls(f2, f1, {_f(float(g))}, {n});",
            f"    Sub(f0, f0, f2, {n});  // m = i % G",
            f"    Muls(f0, f0, static_cast<float>(td_.rpad * {eb}), {n});",
            f"    Muls(f1, f1, {_f(float(eb))}, {n});",
            f"    Add(f0, f0, f1, {n});",
            f"    Cast(ti, f0, RoundMode::CAST_RINT, static_cast<uint32_t>({n}));",
            "}",
        ]
        self.tables[key] = name
        return name

    def _load_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets j*G*eb: Gather of member m from [rows][G] uses base m*eb."""
        key = ("L", g, eb)
        if key in self.tables:
            return self.tables[key]
        name = f"tblL{g}_{eb}"
        self.tbuf(f"tb_{name}", "align_up(tileRows, 64) * 4")
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = tb_{name}.Get<uint32_t>();",
            f"ArithProgression(tb_{name}.Get<int32_t>(), static_cast<int32_t>(0), static_cast<int32_t>({g * eb}), "
            "static_cast<int32_t>(td_.tileRows));",
        ]
        self.tables[key] = name
        return name


def vector_kernel_class(p: ir.Program, gen: _VecGen) -> str:
    v = p.vector
    assert v is not None
    cls = f"VecKernel{camel(p.name)}"
    names = [x.name for x in p.tensors]
    gm_args = names[:len(p.inputs)] + [w.name for w in p.workspaces] + names[len(p.inputs):]
    L = [VEC_PRELUDE, "", "template <typename TilingT>", f"class {cls} {{", "public:", f"    __aicore__ inline {cls}() {{}}"]
    L.append(f"    __aicore__ inline void Init({', '.join('GM_ADDR ' + mangle('arg', n) for n in gm_args)}, "
             "const TilingT& td) {")
    L.append("        td_ = td;")
    for t in gen.vec_tensors:
        T = CTYPE[p.dtype_of(t)]
        size = f"td.splits * td.{mangle('numel', t)}" if p.is_workspace(t) else f"td.{mangle('numel', t)}"
        L.append(f"        {mangle('gm', t)}.SetGlobalBuffer(reinterpret_cast<__gm__ {T}*>({mangle('arg', t)}), "
                 f"static_cast<uint64_t>({size}));")
    L += ub_init(((b.name, b.pos in ("VECIN", "VECOUT"), f"b_{b.name}") for b in gen.bufs), "VDEPTH")
    L.append("    }")
    L.append("")
    L.append("    __aicore__ inline void Process() {")
    for name, cls_ in gen.pool_cls.items():
        if cls_[0] == "rawgroup":
            T = CTYPE[cls_[2]]
            L.append(f"        LocalTensor<{T}> {name}_raw = tb_{name}.Get<{T}>();")
        else:
            L.append(f"        LocalTensor<float> {name} = tb_{name}.Get<float>();")
    L += ["        " + x for x in gen.init_lines]
    L += gen.lines
    L.append("    }")
    L.append("")
    L.append("private:")
    L.append("    TPipe pipe;")
    L += ub_members(((b.name, {"VECIN": "in", "VECOUT": "out"}.get(b.pos, "calc")) for b in gen.bufs),
                    "TPosition", "VDEPTH")
    for t in gen.vec_tensors:
        L.append(f"    GlobalTensor<{CTYPE[p.dtype_of(t)]}> {mangle('gm', t)};")
    L.append("    TilingT td_;")
    L.append("};")
    return "\n".join(L)


def vec_usage(p: ir.Program) -> dict[str, bool]:
    """Tensors the vector stage touches -> whether it needs their row width (tile access)."""
    v = p.vector
    assert v is not None
    out: dict[str, bool] = {}

    def add(t: str, w: bool) -> None:
        out[t] = out.get(t, False) or w

    for e in ir.body_exprs(v.body):
        if isinstance(e, ir.Load):
            add(e.tensor, e.mode == "tile")
    for s in stores(v.body):
        add(s.tensor, s.at != v.var)
    return out
