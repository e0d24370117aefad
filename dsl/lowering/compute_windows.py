"""The vector compute pass on a ``windows`` loop (pooling): the taps loop, its staged input
rows (per (kd, kh), or a ring per kd with ``reuse=True``), the separable fold
(``combine=``) and the kw tap offset tables. A sum of 16-bit rows folds in fp32 (each staged
row cast up, added, the kw taps gathered from the fp32 fold): eager's average pools
accumulate in fp32 and round once, and a 16-bit fold rounded every partial row sum, which a
border divisor or a large window scaled past the tolerance. Mixed into ``compute._Compute`` beside
``ComputeOps``; statements, pools, queues and loads are the pass's own.
"""

from __future__ import annotations

from .. import ir
from ..names import mangle
from ..parser import DslError
from .compute_ops import CTYPE, NBYTES, Pool, cconst
from .tiling import window_dilation, window_params


class WindowOps:
    """The pass provides emit, counter, indent, pools, queues, loop, p, unit, roles, tap,
    init_lines, _queue, _new, _mask, _calc, _block and _release."""

    def _taps_loop(self, s: ir.InnerLoop) -> None:
        """Window offsets (kd, kh, kw). For each (kd, kh) the input rows the tile's output rows
        need are staged once in UB (one segment per row, 'fill' outside the input, plus a
        fill slot at the end); for each kw a vector of byte offsets (ow * stride - pad + kw,
        or the fill slot) turns a staged row into the tap's values with one Gather."""
        wpar = window_params(self.loop)
        (kd, sd, pd), (kh, sh, ph), (kw, sw, pw) = wpar["D"], wpar["H"], wpar["W"]
        # dilation: tap j of a dim sits j * d from the window's start (C++ index expressions)
        dil = window_dilation(self.loop)
        okd, okh, okw = (v if dil[n] == 1 else f"{v} * {dil[n]}" for n, v in (("D", "kd"), ("H", "kh"), ("W", "kw")))
        x = self.loop.tensor
        combine = self.loop.combine if self.loop.combine and _folds_taps(s, self.loop.combine) else ""
        dtype = self.p.param(x).dtype
        t = CTYPE[dtype]
        # the fold's dtype: sums of 16-bit rows are accumulated in fp32 (see the module doc)
        adt = "f32" if combine == "sum" and dtype in ("f16", "bf16") else dtype
        at = CTYPE[adt]
        U = self.unit
        loads = [e for e in ir.body_exprs(s.body) if isinstance(e, ir.Load)]
        fill = f"static_cast<{t}>({cconst(self.loop.fill)})"
        if combine:  # the accumulator stage outlives the (kd, kh) loops
            if "stage" not in self.pools:
                self.pools["stage"] = Pool("stage", f"align_up(stageElems, 128) * {NBYTES[adt]}", "stageBuf")
            stage_acc = self.pools["stage"].get()
            self.counter += 1
            acc = f"sacc{self.counter}"
            self.emit(f"LocalTensor<{at}> {acc} = {stage_acc.name}.Get<{at}>();")
            if adt != dtype:  # a staged row cast up before it is added (one row of a ring, a tile's rows else)
                self._calc(f"up{self.counter}Buf", f"align_up({'stW' if self.loop.reuse else 'stageElems'}, 128) * 4")
                self.init_lines.append(f"LocalTensor<float> {acc}Up = up{self.counter}Buf.Get<float>();")
        reuse = self.loop.reuse  # the ring: stage once per kd (_stage_ring)
        # carry (3-D): planes kd >= SD are planes kd - SD of the next output depth; their
        # kh-folded rows stay in UB and that od folds them in instead of staging them again
        carry = ""
        if combine and reuse and self.loop.carry and sd < kd <= 2 * sd:
            carry = self._carry_buffer("carry", f"{kd - sd} * align_up(tileRows * stW, 128) * {NBYTES[adt]}", at)
            self.emit("// the previous tile was this plane's od - 1, whole (one tile a unit)")
            self.emit(f"const bool {carry}Ok = td_.rowTiles == 1 && td_.OW <= td_.chunk && ut > u0 && u % td_.OD != 0;")
        # carry (2-D): the KH - SH last ring rows of a tile are the first of the next tile's
        rowcarry = ""
        if combine and reuse and self.loop.carry and self.loop.dim == 2 and kh > sh:
            rowcarry = self._carry_buffer("rcarry", f"align_up({kh - sh} * stW, 128) * {NBYTES[dtype]}", t)
            self.emit("// the previous tile was this plane's previous row tile (one chunk a row)")
            self.emit(f"const bool {rowcarry}Ok = td_.OW <= td_.chunk && ut > u0 && ut % td_.rowTiles != 0;")
        colcarry = ""
        if self.loop.carry and self.loop.dim == 1 and loads and not reuse:
            colcarry = self._carry_buffer("ccarry", f"{16 * U * NBYTES[dtype]}", t)
            self.init_lines.append(f"int64_t {colcarry}Key = -1;  // the (row, first column) the kept 512 B are for")
        self.emit(f"for (int64_t kd = 0; kd < {kd}; ++kd) {{")
        if not reuse:
            self.emit(f"for (int64_t kh = 0; kh < {kh}; ++kh) {{")
        self.indent += 1
        if carry:
            api = {"sum": "Add", "max": "Max"}[combine]
            slot = f"{carry}[kd * acx_align_up(td_.tileRows * td_.stW, 128)]"
            self.emit(f"if (kd < {kd - sd} && {carry}Ok) {{  // kept from od - 1: no staging")
            self.emit("    if (kd == 0) {")
            self.emit(f"        DataCopy({acc}, {slot}, static_cast<int32_t>(r * td_.stW));")
            self.emit("    } else {")
            self.emit(f"        {api}({acc}, {acc}, {slot}, static_cast<int32_t>(r * td_.stW));")
            self.emit("    }")
            self.emit("    continue;")
            self.emit("}")
        st = None
        if loads:
            q = self._queue(x, "inq", "stage")
            self.roles[x] = "window_in"
            self.counter += 1
            st = f"st{self.counter}"
            self.emit(f"LocalTensor<{t}> {st} = {q.name}.AllocTensor<{t}>();")
            self.emit(f"const int64_t cs = c0 * {sw} - {pw};  // first input column of the segment")
            self.emit(f"const int64_t g0 = {self._seg_start('cs > 0 ? cs : 0')};")
            self.emit("const int64_t g1 = acx_min(cs + td_.segLen, td_.IW);")
            self.emit("const int64_t pl = u / td_.OD;")
            self.emit(f"const int64_t id = (u % td_.OD) * {sd} - {pd} + {okd};")
        if loads and reuse:
            self._stage_ring(st, q.name, x, t, fill, packed=bool(combine), rowcarry=rowcarry)
            if not combine:
                self.emit(f"for (int64_t kh = 0; kh < {kh}; ++kh) {{")
        elif loads:
            self.emit("// tile rows whose input row ih = oh * SH - PH + kh exists: [lo, hi)")
            self.emit(f"const int64_t ohMin = acx_max(0, ({ph} - {okh} + {sh - 1}) / {sh});")
            self.emit(f"const int64_t ohNum = td_.IH - 1 + {ph} - {okh};  // < 0: no output row reads this kh")
            self.emit(f"const int64_t ohMax = ohNum >= 0 ? ohNum / {sh} : -1;  // inclusive")
            self.emit("const bool planeOk = id >= 0 && id < td_.ID && g1 > g0;")
            self.emit("const int64_t lo = planeOk ? acx_min(r, acx_max(0, ohMin - oh0)) : r;")
            self.emit("const int64_t hi = planeOk ? acx_max(lo, acx_min(r, ohMax - oh0 + 1)) : r;")
            self.emit("for (int64_t ri = 0; ri < r; ++ri) {")
            self.emit("    if (ri < lo || ri >= hi) {")
            self.emit(f"        Duplicate({st}[ri * td_.stW], {fill}, static_cast<int32_t>(td_.stW));")
            self.emit("    } else {")
            self.emit(f"        Duplicate({st}[ri * td_.stW + td_.stW - {U}], {fill}, {U});")
            self.emit("    }")
            self.emit("}")
            gs = "g0"
            if colcarry:  # 1-D: the segment's first 512 B were the previous chunk's last
                self.emit(f"const bool {colcarry}Use = hi - lo == 1 && {colcarry}Key == u * td_.IW + g0;")
                self.emit(f"const int64_t gs = {colcarry}Use ? g0 + {16 * U} : g0;  // the first column copied from GM")
                self.emit(f"if ({colcarry}Use) {{")
                self.emit(f"    DataCopy({st}[lo * td_.stW], {colcarry}, {16 * U});")
                self.emit("}")
                gs = "gs"
            self.emit(f"if (hi > lo && g1 > {gs}) {{  // one strided copy: input rows SH * IW apart")
            self.emit(f"    const int64_t ih = (oh0 + lo) * {sh} - {ph} + {okh};")
            self.emit(f"    CopyRowsIn({st}[lo * td_.stW + {gs} - g0], {mangle('gm', x)}[((pl * td_.ID + id) * td_.IH + ih) * td_.IW + {gs}], "
                      f"hi - lo, g1 - {gs}, {sh} * td_.IW, td_.stW);")
            self.emit("}")
            self.emit(f"{q.name}.EnQue({st});")
            self.emit(f"{st} = {q.name}.DeQue<{t}>();")
        elif reuse and not combine:
            self.emit(f"for (int64_t kh = 0; kh < {kh}; ++kh) {{")
        if combine:  # separable: fold the (kd, kh) rows, then gather only the kw taps
            if reuse:
                st = self._combine_ring(acc, st, q.name, dtype, adt, combine, carry, rowcarry)
                self.emit("for (int64_t ri = 0; ri < r; ++ri) {  // the accumulator's fill slots (a packed ring has none)")
                self.emit(f"    Duplicate({acc}[ri * td_.stW + td_.stW - {U}], {fill}, {U});")
                self.emit("}")
            else:
                st = self._combine_stage(acc, st, q.name, dtype, adt, combine)
            self.emit(f"const int64_t g0 = {self._seg_start(f'acx_max(0, c0 * {sw} - {pw})')};  // the segment's first input column")
        fo = self._new("col", "f32")
        mask, m = self._mask()
        self.counter += 1
        tbl = f"tapOff{self.counter}"  # kw tables of byte offsets, rebuilt only when they change
        # 1-D: a plane is one row, so every row's first, interior and last chunks take turns
        # and one set of tables would be rebuilt ~3 times a row: keep a set per kind of chunk
        slots = 3 if self.loop.dim == 1 else 1
        if loads:
            self._calc(f"{tbl}Buf", f"{slots * kw} * align_up(colElems, 128) * 4")
            self.init_lines += [f"LocalTensor<int32_t> {tbl}All = {tbl}Buf.Get<int32_t>();"]
            self.init_lines += [f"int64_t {tbl}Key{i} = -(static_cast<int64_t>(1) << 62);  // the chunk these tables were built for"
                                for i in range(slots)]
            a64 = "acx_align_up(wp, 64)"
            sel = "SELMODE::VSEL_TENSOR_SCALAR_MODE"
            self.emit("// an interior chunk (no padding, no right edge) has offsets c0 * SW - PW + ow * SW + kw - g0")
            self.emit("// = ow * SW + kw whatever c0 is: its tables are shared; edge chunks key on c0")
            self.emit(f"const bool inner{tbl} = c0 * {sw} >= {pw} && (c0 + wp - 1) * {sw} + {(kw - 1) * dil['W']} - {pw} < td_.IW;")
            # interior chunks share tables per offset of their start below its 512 B alignment
            self.emit(f"const int64_t key{tbl} = inner{tbl} ? -2 - (c0 * {sw} - {pw} - g0) : c0;")
            if slots == 1:
                self.emit(f"int64_t& {tbl}Key = {tbl}Key0;")
                self.emit(f"const LocalTensor<int32_t> {tbl} = {tbl}All;")
            else:  # slot 0 the first chunk of a row, 1 interior chunks, 2 the others (the right edge)
                self.emit(f"const int64_t slot{tbl} = inner{tbl} ? 1 : (c0 == 0 ? 0 : 2);")
                self.emit(f"int64_t& {tbl}Key = slot{tbl} == 0 ? {tbl}Key0 : (slot{tbl} == 1 ? {tbl}Key1 : {tbl}Key2);")
                self.emit(f"const LocalTensor<int32_t> {tbl} = {tbl}All[slot{tbl} * {kw} * acx_align_up(wp, 128)];")
            self.emit(f"if (key{tbl} != {tbl}Key) {{")
            self.emit(f"    {tbl}Key = key{tbl};")
            self.emit(f"    for (int64_t kw = 0; kw < {kw}; ++kw) {{")
            for line in [
                f"CreateVecIndex({fo.cpp}, 0.0f, static_cast<uint32_t>(wp));",
                f"Adds({fo.cpp}, {fo.cpp}, static_cast<float>(c0), static_cast<int32_t>(wp));",
                f"Muls({fo.cpp}, {fo.cpp}, {float(sw)}f, static_cast<int32_t>(wp));",
                f"Adds({fo.cpp}, {fo.cpp}, static_cast<float>({okw} - {pw}), static_cast<int32_t>(wp));",
                f"CompareScalar({m}, {fo.cpp}, 0.0f, CMPMODE::GE, {a64});",
                f"Select({fo.cpp}, {m}, {fo.cpp}, -1.0f, {sel}, {a64});",
                f"CompareScalar({m}, {fo.cpp}, static_cast<float>(td_.IW), CMPMODE::LT, {a64});",
                f"Select({fo.cpp}, {m}, {fo.cpp}, -1.0f, {sel}, {a64});",
                f"Adds({fo.cpp}, {fo.cpp}, static_cast<float>(-g0), static_cast<int32_t>(wp));",
                f"CompareScalar({m}, {fo.cpp}, 0.0f, CMPMODE::GE, {a64});",
                f"Select({fo.cpp}, {m}, {fo.cpp}, static_cast<float>(td_.stW - {U}), {sel}, {a64});",
                f"Muls({fo.cpp}, {fo.cpp}, {float(NBYTES[adt if combine else dtype])}f, static_cast<int32_t>(wp));",
                f"Cast({tbl}[kw * acx_align_up(wp, 128)], {fo.cpp}, RoundMode::CAST_RINT, static_cast<int32_t>(wp));",
            ]:
                self.emit("        " + line)
            self.emit("    }")
            self.emit("}")
        self.emit(f"for (int64_t kw = 0; kw < {kw}; ++kw) {{")
        self.indent += 1
        # reuse: output row ri's kh-th input row is staged row ri * SH + kh
        row = f"(ri * {sh} + kh)" if reuse and not combine else "ri"
        self.tap = (st, f"{tbl}[kw * acx_align_up(wp, 128)]", adt if combine else dtype, row)
        self._block(s.body, s.var)
        self.indent -= 1
        self.emit("}")
        if reuse and not combine:
            self.emit("}  // kh")
        if colcarry:  # keep the next chunk's first 512 B (an aligned segment start) if staged here
            a = 16 * U
            self.emit(f"const int64_t cs1 = (c0 + td_.chunk) * {sw} - {pw};  // the next chunk's")
            self.emit(f"const int64_t g0n = {self._seg_start('cs1 > 0 ? cs1 : 0')};")
            self.emit(f"if (c0 + td_.chunk < td_.OW && td_.IW % {a} == 0 && hi - lo == 1 && g0n >= g0 && g0n + {a} <= g1) {{")
            self.emit(f"    DataCopy({colcarry}, {st}[lo * td_.stW + g0n - g0], {a});")
            self.emit(f"    {colcarry}Key = u * td_.IW + g0n;")
            self.emit("} else {")
            self.emit(f"    {colcarry}Key = -1;")
            self.emit("}")
        if st is not None and not combine:
            self.emit(f"{self.queues[x].name}.FreeTensor({st});")
        if reuse and not combine:
            self.indent -= 1
            self.emit("}  // kd")
        elif not combine:
            self.indent -= 1
            self.emit("}")
            self.emit("}")
        self.pools["mask"].put(mask)
        self._release(fo)
        if combine:
            self.pools["stage"].put(stage_acc)

    def _window_recip(self, e: ir.WindowRecip, hint, pre):
        """window_recip(t): 1 / the in-bounds taps of each output element, as the product of
        one count per pooled dim -- W a vector of the chunk's columns, D and H a scalar per
        output row. A tile whose every window is whole (the interior) is one Duplicate of
        1 / (KD KH KW); a border tile builds the column vector (~10 ops of one row) and scales
        it into each row with one Muls. Only the loop's validated integers reach the C++."""
        wpar = window_params(self.loop)
        if self.loop.dilation != 1:
            raise DslError("window_recip(t) counts the taps of undilated windows (PyTorch's average "
                           "pools have no dilation)", e.loc)
        d = self._dest("tile", "f32", hint, [], pre)

        def span(n: str, size: str) -> tuple[int, int, int, str, str]:
            k, st, pd = wpar[n]
            return (k, st, pd, str(-pd), f"{size} + {pd}") if e.padded else (k, st, pd, "0", size)

        (kd, sd, pd, lod, hid), (kh, sh, ph, loh, hih), (kw, sw, pw, low, hiw) = (
            span("D", "td_.ID"), span("H", "td_.IH"), span("W", "td_.IW"))
        self.counter += 1
        i = self.counter
        self.emit(f"// window_recip: 1 / (taps inside the {'padded ' if e.padded else ''}input) "
                  "= 1 / (count along D x along H x along W)")
        self.emit(f"const int64_t ds{i} = (u % td_.OD) * {sd} - {pd};  // the window's first input plane")
        self.emit(f"const int64_t cd{i} = acx_min(ds{i} + {kd}, {hid}) - acx_max(ds{i}, {lod});")
        self.emit(f"const bool whole{i} = cd{i} == {kd} && oh0 * {sh} - {ph} >= {loh} && "
                  f"(oh0 + r - 1) * {sh} - {ph} + {kh} <= {hih} && c0 * {sw} - {pw} >= {low} && "
                  f"(c0 + w - 1) * {sw} - {pw} + {kw} <= {hiw};")
        self.emit(f"if (whole{i}) {{  // every window of the tile is whole")
        self.emit(f"    Duplicate({d.cpp}, {1.0 / (kd * kh * kw)!r}f, cnt);")
        self.emit("} else {")
        self.indent += 1
        col = self._new("col", "f32")
        n = "static_cast<int32_t>(wp)"
        for line in [
            f"CreateVecIndex({col.cpp}, static_cast<float>(c0), static_cast<uint32_t>(wp));  // ow",
            f"Muls({col.cpp}, {col.cpp}, {float(sw)}f, {n});",
            f"Adds({col.cpp}, {col.cpp}, {float(kw - pw)}f, {n});  // one past the window's last column",
            f"Mins({col.cpp}, {col.cpp}, static_cast<float>({hiw}), {n});",
            f"CreateVecIndex({d.cpp}, static_cast<float>(c0), static_cast<uint32_t>(wp));",
            f"Muls({d.cpp}, {d.cpp}, {float(sw)}f, {n});",
            f"Adds({d.cpp}, {d.cpp}, {float(-pw)}f, {n});  // the window's first column",
            f"Maxs({d.cpp}, {d.cpp}, static_cast<float>({low}), {n});",
            f"Sub({col.cpp}, {col.cpp}, {d.cpp}, {n});  // the count along W",
            f"Maxs({col.cpp}, {col.cpp}, 1.0f, {n});  // columns past the chunk's end: no zero divisor",
            f"Duplicate({d.cpp}, 1.0f, {n});",
            f"Div({col.cpp}, {d.cpp}, {col.cpp}, {n});",
            "for (int64_t ri = 0; ri < r; ++ri) {",
            f"    const int64_t hs = (oh0 + ri) * {sh} - {ph};",
            f"    const int64_t ch = acx_min(hs + {kh}, {hih}) - acx_max(hs, {loh});",
            f"    Muls({d.cpp}[ri * wp], {col.cpp}, 1.0f / static_cast<float>(acx_max(1, cd{i} * ch)), {n});",
            "}",
        ]:
            self.emit(line)
        self._release(col)
        self.indent -= 1
        self.emit("}")
        return d

    def _carry_buffer(self, prefix: str, bytes_expr: str, t: str) -> str:
        """A UB buffer of its own for what windows(carry=True) keeps from one tile to the next."""
        self.counter += 1
        name = f"{prefix}{self.counter}"
        self._calc(f"{name}Buf", bytes_expr)
        self.init_lines.append(f"LocalTensor<{t}> {name} = {name}Buf.Get<{t}>();")
        return name

    def _seg_start(self, col: str) -> str:
        """The first input column a staged segment starts at. 1-D windows: ``col`` aligned down
        to 512 B when the rows are (IW a multiple of 512 B), so the copy starts 512 B aligned
        in GM (full bandwidth; the stage's rows have room for the extra columns, see tiling)."""
        if self.loop.dim != 1:
            return col
        a = 16 * self.unit
        return f"(td_.IW % {a} == 0 ? ({col}) / {a} * {a} : ({col}))"

    def _stage_ring(self, st: str, q: str, x: str, t: str, fill: str, packed: bool = False,
                    rowcarry: str = "") -> None:
        """windows(reuse=True): the (r - 1) * SH + KH input rows a tile of r output rows reads
        at this kd, staged once (one copy, rows IW apart; ``fill`` for rows outside the input)
        and read by every kh: each input row enters UB once per tile, not once per kh.
        ``packed`` (the separable fold, whose fill slots live in the accumulator): a segment
        of whole rows of whole 32 B blocks is staged at a pitch of IW, so the rows are one
        contiguous burst in GM and in UB (one DataCopy, as aligned as its start) instead of
        a burst per row at the pitch of the input rows. ``rowcarry``: the first KH - SH rows
        come from the previous tile's ring (saved by :meth:`_combine_ring`), not from GM."""
        wpar = window_params(self.loop)
        (kh, sh, ph), U = wpar["H"], self.unit
        self.emit(f"const int64_t ih0 = oh0 * {sh} - {ph};  // staged row j is input row ih0 + j")
        self.emit(f"const int64_t rr = (r - 1) * {sh} + {kh};")
        self.emit("const bool planeOk = id >= 0 && id < td_.ID && g1 > g0;")
        if packed:
            self.emit(f"const int64_t rp = g0 == 0 && g1 == td_.IW && td_.IW % {U} == 0 ? td_.IW : td_.stW;  // the ring's row pitch")
        else:
            self.emit("const int64_t rp = td_.stW;  // the ring's row pitch")
        j0 = "0"
        if rowcarry:
            self.emit(f"const int64_t nkeep = {rowcarry}Ok ? {kh - sh} : 0;  // rows kept from the previous tile")
            self.emit("if (nkeep > 0) {")
            self.emit(f"    DataCopy({st}, {rowcarry}, static_cast<int32_t>(nkeep * rp));")
            self.emit("}")
            j0 = "nkeep"
        self.emit(f"const int64_t jlo = planeOk ? acx_min(rr, acx_max({j0}, -ih0)) : rr;")
        self.emit("const int64_t jhi = planeOk ? acx_max(jlo, acx_min(rr, td_.IH - ih0)) : rr;")
        self.emit(f"for (int64_t j = {j0}; j < rr; ++j) {{")
        self.emit("    if (j < jlo || j >= jhi) {")
        self.emit(f"        Duplicate({st}[j * rp], {fill}, static_cast<int32_t>(rp));")
        self.emit("    } else if (rp == td_.stW) {  // a row's fill slot")
        self.emit(f"        Duplicate({st}[j * td_.stW + td_.stW - {U}], {fill}, {U});")
        self.emit("    }")
        self.emit("}")
        self.emit("if (jhi > jlo) {  // one copy: consecutive input rows")
        self.emit(f"    CopyRowsIn({st}[jlo * rp], {mangle('gm', x)}[((pl * td_.ID + id) * td_.IH + ih0 + jlo) * td_.IW + g0], "
                  "jhi - jlo, g1 - g0, td_.IW, rp);")
        self.emit("}")
        self.emit(f"{q}.EnQue({st});")
        self.emit(f"{st} = {q}.DeQue<{t}>();")

    def _combine_ring(self, acc: str, st: str, q: str, dtype: str, adt: str, combine: str, carry: str = "",
                      rowcarry: str = "") -> str:
        """windows(combine=..., reuse=True): fold the ring's rows ri * SH + kh into row ri of
        the accumulator stage for every kh (one op per output row and kh), free the ring,
        close the kd loop; the accumulator, as :meth:`_combine_stage` returns it."""
        kh, sh, _ = window_params(self.loop)["H"]
        api = {"sum": "Add", "max": "Max"}[combine]
        t, at = CTYPE[dtype], CTYPE[adt]
        self.emit("const int32_t rn = static_cast<int32_t>(rp == td_.stW ? td_.stW : g1 - g0);  // values a ring row holds")
        dst, first = acc, "kd == 0 && kh == 0"
        if carry:  # a plane the next od reads: fold its rows into its carry slot, then into acc
            sd = window_params(self.loop)["D"][1]
            self.emit(f"const bool toCarry = kd >= {sd};")
            self.emit(f"const LocalTensor<{at}> fd = toCarry ? {carry}[(kd - {sd}) * acx_align_up(td_.tileRows * td_.stW, 128)] : {acc};")
            dst, first = "fd", "toCarry ? kh == 0 : (kd == 0 && kh == 0)"
        self.emit(f"for (int64_t kh = 0; kh < {kh}; ++kh) {{")
        self.emit("    for (int64_t ri = 0; ri < r; ++ri) {")
        self.emit(f"        const LocalTensor<{t}> src = {st}[(ri * {sh} + kh) * rp];")
        self.emit(f"        if ({first}) {{")
        if adt != dtype:  # fp32 fold: the row cast up into the fold, or cast up and added
            self.emit(f"            Cast({dst}[ri * td_.stW], src, RoundMode::CAST_NONE, rn);")
            self.emit("        } else {")
            self.emit(f"            Cast({acc}Up, src, RoundMode::CAST_NONE, rn);")
            self.emit(f"            {api}({dst}[ri * td_.stW], {dst}[ri * td_.stW], {acc}Up, rn);")
        else:
            self.emit(f"            DataCopy({dst}[ri * td_.stW], src, acx_align_up(rn, {32 // NBYTES[dtype]}));")
            self.emit("        } else {")
            self.emit(f"            {api}({dst}[ri * td_.stW], {dst}[ri * td_.stW], src, rn);")
        self.emit("        }")
        self.emit("    }")
        self.emit("}")
        if carry:
            self.emit("if (toCarry) {")
            self.emit(f"    {api}({acc}, {acc}, fd, static_cast<int32_t>(r * td_.stW));")
            self.emit("}")
        if rowcarry:  # the next row tile's first KH - SH ring rows
            self.emit(f"DataCopy({rowcarry}, {st}[r * {sh} * rp], static_cast<int32_t>({kh - sh} * rp));")
        self.emit(f"{q}.FreeTensor({st});")
        self.indent -= 1
        self.emit("}  // kd")
        return acc

    def _combine_stage(self, acc: str, st: str, q: str, dtype: str, adt: str, combine: str) -> str:
        """windows(combine=sum|max): fold the (kd, kh) staged rows into one accumulator stage
        (the first copied, the rest combined elementwise, each freed), close the (kd, kh)
        loops and return the accumulator: the taps body then gathers kw taps of it only, so
        a kd x kh x kw window costs kd * kh elementwise ops on the staged rows and kw
        Gathers instead of kd * kh * kw Gathers. Exact for max; for sum the order of the
        additions changes (rows first). ``adt`` f32 for 16-bit rows: each is cast up first."""
        n = "static_cast<int32_t>(r * td_.stW)"
        api = {"sum": "Add", "max": "Max"}[combine]
        self.emit("if (kd == 0 && kh == 0) {")
        if adt != dtype:
            self.emit(f"    Cast({acc}, {st}, RoundMode::CAST_NONE, {n});")
            self.emit("} else {")
            self.emit(f"    Cast({acc}Up, {st}, RoundMode::CAST_NONE, {n});")
            self.emit(f"    {api}({acc}, {acc}, {acc}Up, {n});")
        else:
            self.emit(f"    DataCopy({acc}, {st}, acx_align_up(r * td_.stW, {32 // NBYTES[dtype]}));")
            self.emit("} else {")
            self.emit(f"    {api}({acc}, {acc}, {st}, {n});")
        self.emit("}")
        self.emit(f"{q}.FreeTensor({st});")
        self.indent -= 1
        self.emit("}")
        self.emit("}")
        return acc


def _folds_taps(s: ir.InnerLoop, combine: str) -> bool:
    """Whether a taps body is a fold with ``combine`` (each statement ``v = v + e`` /
    ``v = maximum(v, e)`` with the loads in ``e``), the one form windows(combine=...) may
    reorder; anything else is an error, not a silent change of meaning."""
    op = {"sum": "add", "max": "max"}[combine]
    loads = [e for e in ir.body_exprs(s.body) if isinstance(e, ir.Load)]
    for st in s.body:
        v = getattr(st, "value", None)
        ok = isinstance(st, ir.Assign) and isinstance(v, ir.Binary) and v.op == op and \
            isinstance(v.lhs, ir.Var) and v.lhs.name == st.target
        if not ok:
            raise DslError(f"windows(combine={combine}): the taps body must fold with {combine} "
                           f"(acc = {'acc + e' if combine == 'sum' else 'maximum(acc, e)'})", s.loc)
    return bool(loads)
