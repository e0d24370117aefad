"""The vector compute pass on the rows stage of a ``@cube_kernel`` (the AIV launch after the
cube stage): its chunks loops, GM access and groups of per-row values. Mixed into
``compute._Compute`` beside ``ComputeOps``; statements, liveness, pools and expressions are the
pass's own, this adds what only that stage has:

- every chunks loop ``k`` has its own chunk size and row width (tiling fields ``ch<k>``,
  ``pw<k>``, ``chunks(t, S, parts=P)``), and issues all its loads up front, one queue each, so
  that the split-K partial results of a workspace are summed into a load before any use;
- groups of G per-row values are [G][rowElems] in UB (member m of every row contiguous):
  ``load_cols`` reads [G, rows] columns, ``load_group`` moves [rows, G] through a ``Gather`` per
  member, ``load_members`` broadcasts G constants over the rows, a group store goes back to
  [rows, G] with one ``Gather``; ``g[i]``/``g[a:b]`` are views; ``sinkhorn`` normalises n x n.
"""

from __future__ import annotations

from .. import ir
from ..names import mangle
from ..parser import DslError
from .compute_ops import CTYPE, NBYTES, VEC2, Buffer, Pool, Val, cconst


class GroupOps:
    """The pass provides emit, counter, pools, queues, loop, p, tp, hoisted, _expr, _block,
    _dest, _done, _release, _new, _hoist_row_scalars and the chunk-loop state set up here."""

    # ------------------------------------------------------------ buffers
    def _group_pool(self, size: int) -> str:
        kind = f"grp{size}"
        if kind not in self.pools:
            self.pools[kind] = Pool(kind, f"{size} * rowElems * 4", f"grp{size}Buf")
        return kind

    def _stage_queue(self, key: tuple, kind: str, dtype: str, bytes_expr: str) -> Buffer:
        """A queue of the rows stage, keyed by its use (the n-th load of a chunks loop, a store,
        a group load): chunks loops share them, each sized for the largest use."""
        q = self.queues.get(key)
        if q is None:
            q = Buffer(f"{kind}{len(self.queues)}", kind, bytes_expr, slots=0, dtype=dtype)
            self.queues[key] = q
        elif bytes_expr not in q.bytes_expr:
            q.bytes_expr = f"max({q.bytes_expr}, {bytes_expr})"
        return q

    def _calc(self, name: str, bytes_expr: str) -> str:
        """A VECCALC buffer of its own (Gather tables and their scratch)."""
        if not any(b.name == name for b in self.extra_buffers):
            self.extra_buffers.append(Buffer(name, "table", bytes_expr))
        return name

    # ------------------------------------------------------------ chunks loops
    def _stage_chunks(self, s: ir.InnerLoop) -> None:
        k = next(i for i, c in enumerate(self.chunks) if c is s)
        self.k = k
        self.emit(f"for (int64_t c0 = 0; c0 < td_.pw{k}; c0 += td_.ch{k}) {{")
        self.indent += 1
        self.emit(f"const int64_t w = acx_min(td_.ch{k}, td_.pw{k} - c0);  // columns in this chunk")
        self.emit(f"const int64_t wp = td_.ch{k};  // UB row stride of this loop's tiles")
        self.emit("const int64_t cnt = r * wp;")
        keys: list[tuple] = []
        for e in ir.body_exprs(s.body):
            if isinstance(e, ir.Load) and e.mode in ("tile", "bcast") and (e.tensor, e.mode, e.part) not in keys:
                keys.append((e.tensor, e.mode, e.part))
        self.prefetched = {}
        issued = [self._issue_load(key, i) for i, key in enumerate(keys)]
        for key, q in zip(keys, issued, strict=True):
            v = self.prefetched[key]
            self.emit(f"{v.cpp} = {q.name}.DeQue<{v.ctype}>();")
        for key in keys:
            if self.p.is_workspace(key[0]):
                self._sum_splits(key[0], self.prefetched[key].cpp, self._tile_gm(key[0], key[2]), "r", "w",
                                 f"td_.{mangle('width', key[0])}", "wp", "cnt", "tile", 1)
        self.store_n = 0
        self._block(s.body, s.var)
        for key, q in zip(keys, issued, strict=True):
            self.emit(f"{q.name}.FreeTensor({self.prefetched[key].cpp});")
        self.prefetched = {}
        self.indent -= 1
        self.emit("}")
        self.k = -1

    def _tile_gm(self, tensor: str, part: int | None) -> str:
        off = f"gr * td_.{mangle('width', tensor)} + c0"
        if part:
            off += f" + {part} * td_.pw{self.k}"
        return off

    def _issue_load(self, key: tuple, ordinal: int) -> Buffer:
        tensor, mode, part = key
        dt = self.p.dtype_of(tensor)
        t = CTYPE[dt]
        elems = "align_up(tileElems, 128)" if mode == "tile" else "align_up(colElems, 128)"
        q = self._stage_queue(("in", mode, dt, ordinal), "inq", dt, f"{elems} * {NBYTES[dt]}")
        self.counter += 1
        name = f"ld{self.counter}"
        self.emit(f"LocalTensor<{t}> {name} = {q.name}.AllocTensor<{t}>();")
        if mode == "tile":
            self.emit(f"CopyRowsIn({name}, {mangle('gm', tensor)}[{self._tile_gm(tensor, part)}], r, w, "
                      f"td_.{mangle('width', tensor)}, wp);")
        else:
            self.emit(f"CopyRowsIn({name}, {mangle('gm', tensor)}[c0], 1, w, w, wp);")
        self.emit(f"{q.name}.EnQue({name});")
        # read in place, freed at the end of the chunk: no pool buffer, never a destination
        self.prefetched[key] = Val("tile" if mode == "tile" else "col", dt, name)
        return q

    def _sum_splits(self, tensor: str, ref: str, off: str, rows: str, length: str, gm_stride: str,
                    ub_stride: str, count: str, form: str, size: int) -> None:
        """Add the split-K partial results 1..splits-1 of a workspace into a loaded value (a
        workspace of another dtype than f32 has one split: the checker says so)."""
        x = self._new(form, self.p.dtype_of(tensor), size)
        for line in (
            "for (int64_t s = 1; s < td_.splits; ++s) {  // split-K partial results",
            f"    CopyRowsIn({x.cpp}, {mangle('gm', tensor)}[s * td_.Bt * td_.M * td_.N + {off}], "
            f"{rows}, {length}, {gm_stride}, {ub_stride});",
            "    SetFlag<HardEvent::MTE2_V>(1); WaitFlag<HardEvent::MTE2_V>(1);",
            f"    Add({ref}, {ref}, {x.cpp}, static_cast<int32_t>({count}));",
            "    SetFlag<HardEvent::V_MTE2>(1); WaitFlag<HardEvent::V_MTE2>(1);",
            "}",
        ):
            self.emit(line)
        self._release(x)

    # ------------------------------------------------------------ loads
    def _stage_load(self, e: ir.Load) -> Val:
        if e.mode in ("tile", "bcast"):
            v = self.prefetched.get((e.tensor, e.mode, e.part))
            if v is None:
                raise DslError("load outside its chunks loop", e.loc)
            return v
        dt = self.p.dtype_of(e.tensor)
        t, eb, g = CTYPE[dt], NBYTES[dt], e.size
        gm = mangle("gm", e.tensor)
        self.counter += 1
        m = f"ld{self.counter}"
        if e.mode == "cols":  # [G, rows] columns of this tile: the queue tensor is the value
            q = self._stage_queue((e.tensor, "cols"), "inq", dt, f"{g} * rowElems * {eb}")
            self.emit(f"LocalTensor<{t}> {m} = {q.name}.AllocTensor<{t}>();")
            self.emit(f"CopyRowsIn({m}, {gm}[gr], {g}, r, td_.vN, td_.rowElems);  // [G, rows] columns of this tile")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{t}>();")
            if self.p.is_workspace(e.tensor):
                self._sum_splits(e.tensor, m, "gr", str(g), "r", "td_.vN", "td_.rowElems",
                                 f"{g} * td_.rowElems", "row", g)
            return Val("row", dt, m, q, temp=True, size=g)
        if e.mode == "members":  # G constants, each broadcast over the rows
            q = self._stage_queue((e.tensor, "members"), "inq", dt, f"align_up({g}, 16) * {eb}")
            out = self._new("row", "f32", g)
            self.emit(f"LocalTensor<{t}> {m} = {q.name}.AllocTensor<{t}>();")
            self.emit(f"CopyRowsIn({m}, {gm}[0], 1, {g}, {g}, {g});")
            self.emit(f"{q.name}.EnQue({m});")
            self.emit(f"{m} = {q.name}.DeQue<{t}>();")
            src = m
            if dt != "f32":  # widen in the first G elements of the result, read them all, then fill
                self.emit(f"Cast({out.cpp}, {m}, RoundMode::CAST_NONE, static_cast<uint32_t>({g}));")
                src = out.cpp
            self.emit("SyncVS();")
            self.emit(f"float {m}v[{g}];")
            self.emit(f"for (int32_t mi = 0; mi < {g}; ++mi) {m}v[mi] = static_cast<float>({src}.GetValue(mi));")
            self.emit(f"for (int32_t mi = 0; mi < {g}; ++mi) Duplicate({out.cpp}[mi * td_.rowElems], {m}v[mi], "
                      "static_cast<int32_t>(td_.rowElems));  // one constant per member, broadcast over rows")
            self.emit(f"{q.name}.FreeTensor({m});")
            return out
        # group: [rows, G] row-major in GM -> [G][rowElems] through a Gather per member
        q = self._stage_queue((e.tensor, "group"), "inq", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        tbl = self._load_table(g, eb)
        out = self._new("row", dt, g)
        self.emit(f"LocalTensor<{t}> {m} = {q.name}.AllocTensor<{t}>();")
        self.emit(f"CopyRowsIn({m}, {gm}[gr * {g}], 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.EnQue({m});")
        self.emit(f"{m} = {q.name}.DeQue<{t}>();")
        self.emit(f"for (int32_t mi = 0; mi < {g}; ++mi) Gather({out.cpp}[mi * td_.rowElems], {m}, {tbl}, "
                  f"static_cast<uint32_t>(mi * {eb}), static_cast<uint32_t>(r));")
        self.emit(f"{q.name}.FreeTensor({m});")
        return out

    # ------------------------------------------------------------ stores
    def _stage_store(self, s: ir.Store) -> None:
        dt = self.p.dtype_of(s.tensor)
        t, eb = CTYPE[dt], NBYTES[dt]
        gm = mangle("gm", s.tensor)
        self.counter += 1
        o = f"st{self.counter}"
        if self.tp.type_of(s.value).form == "tile":
            q = self._stage_queue(("out", dt, self.store_n), "outq", dt, f"align_up(tileElems, 128) * {eb}")
            self.store_n += 1
            if isinstance(s.value, (ir.Var, ir.Load)):
                v = self._expr(s.value, s.at)
                self.emit(f"LocalTensor<{t}> {o} = {q.name}.AllocTensor<{t}>();")
                self.emit(f"DataCopy({o}, {v.cpp}, acx_align_up(cnt, {32 // eb}));")
            else:
                self._expr(s.value, s.at, Val("tile", dt, o, q), pre=lambda: self.emit(
                    f"LocalTensor<{t}> {o} = {q.name}.AllocTensor<{t}>();"))
            self.emit(f"{q.name}.EnQue({o});")
            self.emit(f"{o} = {q.name}.DeQue<{t}>();")
            self.emit(f"CopyRowsOut({gm}[{self._tile_gm(s.tensor, s.part)}], {o}, r, w, "
                      f"td_.{mangle('width', s.tensor)}, wp);")
            self.emit(f"{q.name}.FreeTensor({o});")
            return
        # per-row values: [G][rowElems] in UB -> [rows, G] in GM through one Gather
        g = self.tp.type_of(s.value).size
        q = self._stage_queue((s.tensor, "outg"), "outq", dt, f"align_up(tileRows * {g}, 16) * {eb}")
        src = self._expr(s.value, s.at)
        tbl = self._store_table(g, eb)
        self.emit(f"LocalTensor<{t}> {o} = {q.name}.AllocTensor<{t}>();")
        self.emit(f"Gather({o}, {src.cpp}, {tbl}, 0, static_cast<uint32_t>(r * {g}));  // [G][rows] -> [rows][G]")
        self.emit(f"{q.name}.EnQue({o});")
        self.emit(f"{o} = {q.name}.DeQue<{t}>();")
        self.emit(f"CopyRowsOut({gm}[gr * {g}], {o}, 1, r * {g}, r * {g}, td_.tileRows * {g});")
        self.emit(f"{q.name}.FreeTensor({o});")
        if src.temp:
            self._release(src)

    def _store_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets for Gather: out[j*G + m] = in[m*rowElems + j]."""
        name = f"tblS{g}_{eb}"
        if name in self.tables:
            return name
        self.tables.add(name)
        n = f"static_cast<int32_t>(td_.tileRows * {g})"
        a = f"align_up(tileRows * {g}, 64)"
        self._calc(f"{name}Buf", f"{a} * 4")
        self.scratch.append(f"3 * {a} * 4")
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = {name}Buf.Get<uint32_t>();",
            "{",
            "    LocalTensor<float> f0 = scratchBuf.Get<float>();",
            f"    LocalTensor<float> f1 = f0[(td_.tileRows * {g} + 63) / 64 * 64];",
            f"    LocalTensor<float> f2 = f0[2 * ((td_.tileRows * {g} + 63) / 64 * 64)];",
            f"    LocalTensor<int32_t> ti = {name}Buf.Get<int32_t>();",
            f"    CreateVecIndex(f0, 0.0f, static_cast<uint32_t>({n}));",
            f"    Adds(f1, f0, 0.5f, {n});",
            f"    Muls(f1, f1, {cconst(1.0 / g)}, {n});",
            f"    Cast(ti, f1, RoundMode::CAST_FLOOR, static_cast<uint32_t>({n}));  // j = i / G",
            f"    Cast(f1, ti, RoundMode::CAST_NONE, static_cast<uint32_t>({n}));",
            f"    Muls(f2, f1, {cconst(float(g))}, {n});",
            f"    Sub(f0, f0, f2, {n});  // m = i % G",
            f"    Muls(f0, f0, static_cast<float>(td_.rowElems * {eb}), {n});",
            f"    Muls(f1, f1, {cconst(float(eb))}, {n});",
            f"    Add(f0, f0, f1, {n});",
            f"    Cast(ti, f0, RoundMode::CAST_RINT, static_cast<uint32_t>({n}));",
            "}",
        ]
        return name

    def _load_table(self, g: int, eb: int) -> str:
        """uint32 byte offsets j*G*eb: the Gather of member m from [rows][G] starts at m*eb."""
        name = f"tblL{g}_{eb}"
        if name in self.tables:
            return name
        self.tables.add(name)
        self._calc(f"{name}Buf", "align_up(tileRows, 64) * 4")
        self.init_lines += [
            f"LocalTensor<uint32_t> {name} = {name}Buf.Get<uint32_t>();",
            f"ArithProgression({name}Buf.Get<int32_t>(), static_cast<int32_t>(0), static_cast<int32_t>({g * eb}), "
            "static_cast<int32_t>(td_.tileRows));",
        ]
        return name

    # ------------------------------------------------------------ group values
    def _index(self, e: ir.Index, loop_var: str) -> Val:
        """g[i] / g[a:b]: a view of members a..b-1 (the same buffer, released with it)."""
        a = self._expr(e.arg, loop_var)
        origin = (a.origin or a.cpp) if a.buf is not None and a.buf.kind == "inq" else ""
        return Val("row", a.dtype, f"{a.cpp}[{e.start} * td_.rowElems]", a.buf, temp=a.temp, origin=origin,
                   size=e.stop - e.start)

    def _group_binary(self, op: str, a: Val, b: Val, hint: Val | None, pre) -> Val:
        """A group of G with one value per row (or a G=1 view): the single value combines with
        every member."""
        big = a if a.size > b.size else b
        d = self._dest("row", big.dtype, hint, [big], pre)
        for m in range(big.size):
            lhs = f"{a.cpp}[{m} * td_.rowElems]" if a is big else a.cpp
            rhs = f"{b.cpp}[{m} * td_.rowElems]" if b is big else b.cpp
            self.emit(f"{VEC2[op]}({d.cpp}[{m} * td_.rowElems], {lhs}, {rhs}, r);")
        self._done([a, b], d)
        return d

    def _sinkhorn(self, e: ir.Sinkhorn, loop_var: str, hint: Val | None, pre) -> Val:
        """Sinkhorn-Knopp on an n x n matrix per row: `iters` times, rows then columns divided
        by their sums, every step one instruction over the tile's rows."""
        a = self._expr(e.arg, loop_var)
        n = e.n
        own = a.temp and a.buf is not None and a.buf.kind in self.pools and a.size == n * n
        m = a if own else self._new("row", "f32", n * n)
        if not own:
            self._copy(m, a)
            self._done([a], m)
        s = self._new("row", "f32", n)

        def mem(v: Val, i: int) -> str:
            return f"{v.cpp}[{i} * td_.rowElems]"

        self.emit(f"for (int32_t iter = 0; iter < {e.iters}; ++iter) {{  // Sinkhorn-Knopp, {n} x {n} per row")
        for axis in ("row", "col"):
            for i in range(n):
                idx = [(i * n + j) if axis == "row" else (j * n + i) for j in range(n)]
                if n == 1:
                    self.emit(f"    DataCopy({mem(s, i)}, {mem(m, idx[0])}, acx_align_up(r, 8));")
                    continue
                self.emit(f"    Add({mem(s, i)}, {mem(m, idx[0])}, {mem(m, idx[1])}, r);")
                for j in idx[2:]:
                    self.emit(f"    Add({mem(s, i)}, {mem(s, i)}, {mem(m, j)}, r);")
            for i in range(n):
                for j in range(n):
                    den = i if axis == "row" else j
                    self.emit(f"    Div({mem(m, i * n + j)}, {mem(m, i * n + j)}, {mem(s, den)}, r);")
        self.emit("}")
        self._release(s)
        return self._finish(m, hint, pre)
