"""Flat aligned reads (``rows(..., flat=True)``, ``slabs(..., rows=R, flat=True)``): a tile's
whole rows are one contiguous run of GM, read as ONE burst whose start is rounded down to
512 B and whose end is rounded up to 32 B (clamped at the tensor's end), then laid out as
the usual 32 B-padded rows by ``Gather`` calls over a table of byte offsets built once per core (``flatRows`` rows a call).

Why: a row of W elements whose byte size is not a multiple of 512 B makes the per-row copy
(one DataCopyPad burst per row) unaligned at its pitch, and the model charges the SoC's
unaligned factor on every byte (``GmAlignFlags2``); the flat burst is 512 B aligned and long.
The price is one Gather pass (a vector op per 256 B repeat) that double buffering hides
under the copy of the next tile when the kernel is memory-bound. Mixed into
``compute._Compute``.
"""

from __future__ import annotations

from .. import ir
from ..errors import DslError
from ..names import mangle
from .compute_ops import CTYPE, NBYTES, Val
from .tiling import FLAT_ROWS


class FlatOps:
    """Loads of a flat loop: the staging queue, the offset table, the Gather."""

    def _flat_table(self, nbytes: int, stride: str) -> str:
        """Byte offsets (ri * W + j) * size for ri < flatRows, j < stride: row ri of a group of
        staged rows to row ri of a tile of UB row stride ``stride``; built once per core
        (ArithProgression for row 0, one Adds per further row). The lanes past W read the next
        row's head (or the staging slack after the last row): padding, never used."""
        name = f"flatOff{nbytes}"
        if name in self.tables:
            return name
        self.tables.add(name)
        self._calc(f"{name}Buf", f"align_up({FLAT_ROWS} * {'chunkPad' if self.loop.kind == 'rows' else 'tileLen'}, 128) * 4")
        rows = f"td_.{FLAT_ROWS}"
        self.init_lines += [
            f"LocalTensor<int32_t> {name} = {name}Buf.Get<int32_t>();",
            "{  // the flat loads' offset table: row ri of a tile <- element ri * W of the staged run",
            f"    const int64_t fw = {stride};",
            f"    ArithProgression({name}, static_cast<int32_t>(0), static_cast<int32_t>({nbytes}), "
            "static_cast<int32_t>(fw));",
            "    PipeBarrier<PIPE_V>();",
            f"    for (int64_t ri = 1; ri < {rows}; ++ri) {{",
            f"        Adds({name}[ri * fw], {name}, static_cast<int32_t>(ri * {self._flat_width()} * {nbytes}), "
            "static_cast<int32_t>(fw));",
            "    }",
            "    PipeBarrier<PIPE_V>();",
            "}",
        ]
        return name

    def _flat_width(self) -> str:
        return "td_.W" if self.loop.kind == "rows" else "td_.B"

    def _flat_load(self, e: ir.Load, dtype: str) -> Val:
        """One 512 B-aligned burst of the tile's rows into a staging queue, gathered into a tile."""
        rows_loop = self.loop.kind == "rows"
        if rows_loop:
            self.roles[e.tensor] = "tile"
            start, rows, stride, total = "gr * td_.W", "r", "wp", "td_.N * td_.W"
        else:
            self.roles[e.tensor] = "step"
            start, rows, stride, total = "(a * td_.K + k0) * td_.B", "kb", "cntp", "td_.A * td_.K * td_.B"
        size = NBYTES[dtype]
        if size < 2:
            raise DslError(f"flat=True reads '{e.tensor}' ({dtype}) through Gather, which has no 1-byte form "
                           "(bool / u8 / i8): drop flat=", e.loc)
        table = self._flat_table(size, "td_.chunkPad" if rows_loop else "td_.tileLen")
        q = self._queue(e.tensor, "inq", "flat")
        t = CTYPE[dtype]
        self.counter += 1
        n = self.counter
        st = mangle(f"ld{n}", e.tensor)  # the load's staging run
        self.emit(f"// flat read: rows {rows} x {self._flat_width()} as one burst, start 512 B aligned")
        self.emit(f"const int64_t fs{n} = {start};")
        self.emit(f"const int64_t fh{n} = fs{n} % {512 // size};  // elements below the aligned start")
        self.emit(f"const int64_t fe{n} = acx_min(acx_align_up(fs{n} + {rows} * {self._flat_width()}, "
                  f"{32 // size}), {total});")
        self.emit(f"LocalTensor<{t}> {st} = {q.name}.AllocTensor<{t}>();")
        self.emit(f"CopyRowsIn({st}, {mangle('gm', e.tensor)}[fs{n} - fh{n}], 1, fe{n} - fs{n} + fh{n}, 0, 0);")
        self.emit(f"{q.name}.EnQue({st});")
        self.emit(f"{st} = {q.name}.DeQue<{t}>();")
        d = self._new("tile", dtype)
        self.emit(f"for (int64_t g0 = 0; g0 < {rows}; g0 += td_.{FLAT_ROWS}) {{  // flatRows rows a Gather")
        self.emit(f"    Gather({d.cpp}[g0 * {stride}], {st}, {table}.ReinterpretCast<uint32_t>(), "
                  f"static_cast<uint32_t>((fh{n} + g0 * {self._flat_width()}) * {size}), "
                  f"static_cast<uint32_t>(acx_min(td_.{FLAT_ROWS}, {rows} - g0) * {stride}));")
        self.emit("}")
        self.emit("PipeBarrier<PIPE_V>();")
        self.emit(f"{q.name}.FreeTensor({st});")
        return d
