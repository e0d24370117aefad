"""The DSL's intermediate representation: what the parser builds and every later stage reads.

A program is one kernel: GM parameters, tunables, GM workspaces, and a list of *stages*
(``Program.top``, in order): vector stages — distribution loops (``tiles``/``rows``/
``slabs``/``windows``) whose bodies are short lists of statements over tile values — and
cube stages (``blocks(...)``: C = A·B staged through L1/L0 into an L0C accumulator), with
scalar assignments and scalar stores between them. Vector and cube stages share one
expression language (the nodes below). Values are immutable (SSA by name); the planner
decides which buffer holds each one. Every node keeps the DSL line it came from so that
errors and generated comments can point back to the source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DTYPES = ("f32", "f16", "bf16", "i32", "i64", "i8", "u8", "bool")
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "i8": 1, "u8": 1, "bool": 1}
FLOAT_DTYPES = ("f32", "f16", "bf16")

LOOP_KINDS = ("tiles", "rows", "slabs", "windows")
INNER_LOOP_KINDS = ("chunks", "steps", "taps")


@dataclass(frozen=True)
class Loc:
    line: int
    col: int

    def __str__(self) -> str:
        return f"line {self.line}, col {self.col}"


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a GM tensor (``In``/``Out``) or a runtime float (``Scalar``)."""

    name: str
    kind: str  # "in" | "out" | "scalar"
    dtype: str
    loc: Loc


@dataclass(frozen=True)
class Domain:
    """The values a tunable may take: pow2(lo, hi), choice(a, b, ...) or span(lo, hi, step)."""

    kind: str  # "pow2" | "choice" | "span"
    args: tuple[int, ...]

    def size(self) -> int:
        """How many values, computed without enumerating them (a domain is checked before
        anything is allocated for it)."""
        if self.kind == "pow2":
            lo, hi = self.args
            first = max(0, math.ceil(math.log2(lo)))
            return max(0, hi.bit_length() - 1 - first + 1)
        if self.kind == "span":
            lo, hi, step = self.args
            return max(0, (hi - lo) // step + 1)
        return len(self.args)

    def values(self) -> list[int]:
        if self.kind == "pow2":
            lo, hi = self.args
            out, v = [], 1 << max(0, math.ceil(math.log2(lo)))
            while v <= hi:
                out.append(v)
                v <<= 1
            return out
        if self.kind == "span":
            lo, hi, step = self.args
            return list(range(lo, hi + 1, step))
        return list(self.args)

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Tunable:
    name: str
    domain: Domain
    default: int
    loc: Loc


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Expr:
    loc: Loc


@dataclass(frozen=True)
class Const(Expr):
    value: float


@dataclass(frozen=True)
class ScalarRef(Expr):
    """A runtime ``Scalar`` parameter of the kernel."""

    name: str


@dataclass(frozen=True)
class Extent(Expr):
    """A runtime extent of the loop's iteration space: ``width(t)`` = row width (rows
    loop) or reduced extent K (slabs loop)."""

    loop_var: str


@dataclass(frozen=True)
class Position(Expr):
    """``position(at)``: the index along the axis a loop walks, as f32 (exact below 2**24):
    the step index ``k`` of a slabs ``steps`` loop (a scalar), or each element's column in
    its row of a rows tile or chunk (a tile) -- what argmax/argmin compare against."""

    loop_var: str


@dataclass(frozen=True)
class RowPosition(Expr):
    """``row_position(t, d, n)``: in a plain rows loop, row ``g`` of the tile takes
    ``(g // d) % n`` as f32 (``d``, ``n`` host scalars: products of sizes) -- the index of each
    row along one of the row dims (a causal mask compares it with ``position(t)``)."""

    arg: Expr
    count: Expr
    at: str


@dataclass(frozen=True)
class WindowRecip(Expr):
    """``window_recip(t[, padded])`` in a windows loop: for each output element 1 / the number
    of its window's taps inside the input (``padded`` = 1: inside the input and its padding,
    clipped at ``I + P`` -- PyTorch's ``ceil_mode`` divisor with ``count_include_pad``), as
    f32. Separable: the product of one count per pooled dim (an average pool's divisor with
    ``count_include_pad=False``)."""

    loop_var: str
    padded: bool = False


@dataclass(frozen=True)
class ScalarLoad(Expr):
    """``load_scalar(x)``: the one element of a one-element input tensor, read from GM by
    the scalar unit, as an f32 kernel scalar (a learned temperature passed as a tensor)."""

    tensor: str


@dataclass(frozen=True)
class StepLoad(Expr):
    """``load_step(v, k)``: in a slabs ``steps`` loop, ``v[k]`` for the step ``k`` (``v`` has
    one element per step of the reduced axis: a per-channel weight of a norm over channels),
    read from GM by the scalar unit; a scalar, or in a blocked ``slabs(..., rows=R)`` loop a
    tile whose row j holds ``v[k0 + j]``."""

    tensor: str
    loop_var: str


@dataclass(frozen=True)
class Var(Expr):
    name: str


@dataclass(frozen=True)
class Load(Expr):
    """``load(x, at)``: copy the tile of GM tensor ``x`` addressed by loop variable ``at``
    (the distribution loop's tile, a column chunk, or a reduction step) into UB."""

    tensor: str
    at: str
    mode: str = "tile"  # tile | bcast (one row, broadcast over rows) | per_row (one value per row)
    #                     | cols ([G, N] tensor: G values per row from the columns of this tile's rows)
    #                     | group ([N, G] tensor: G values per row) | members ([G]: shared by all rows)
    part: int | None = None  # tile loads in chunks(t, S, parts=P): which of the P parts of the row
    size: int = 0  # G of cols / group / members


@dataclass(frozen=True)
class Unary(Expr):
    op: str
    arg: Expr


@dataclass(frozen=True)
class LeakyRelu(Expr):
    arg: Expr
    slope: float


@dataclass(frozen=True)
class Binary(Expr):
    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class Power(Expr):
    """``base ** n`` for a literal n in 2..4: the base is evaluated once and multiplied by
    itself (``x ** 4`` is two multiplies of one value), so nested powers stay linear."""

    base: Expr
    n: int


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class Select(Expr):
    """``where(cond, a, b)``; ``cond`` is a Compare."""

    cond: Expr
    if_true: Expr
    if_false: Expr


@dataclass(frozen=True)
class Cast(Expr):
    arg: Expr
    dtype: str


@dataclass(frozen=True)
class RowReduce(Expr):
    """``row_sum/row_max/row_min(v)``: one value per row of a rows-loop tile."""

    op: str
    arg: Expr


@dataclass(frozen=True)
class Fill(Expr):
    """``row_fill(c)`` (one value per row) or ``tile_fill(c)`` (a whole tile) of dtype
    ``dtype``; used to start accumulators."""

    kind: str  # "row" | "tile"
    value: float
    dtype: str


@dataclass(frozen=True)
class GridReduce(Expr):
    """``total_sum/total_max/total_min(v)`` inside a distribution loop: one value over every
    tile of every core. The name it is assigned to is a scalar visible after the loop."""

    op: str
    arg: Expr


@dataclass(frozen=True)
class Numel(Expr):
    """``numel(x)``: the element count of tensor ``x``, or ``size(x, d)``: its extent along
    dim ``d`` (negative counts from the end), as a float computed by the host tiling."""

    tensor: str
    dim: int | None = None


@dataclass(frozen=True)
class Scan(Expr):
    """``scan_sum/scan_prod/scan_max(v, carry[, lanes])``: inclusive running op along each row
    of a rows-loop tile, starting from the row value ``carry``. ``lanes`` > 0 asks for the
    blocked (transposed) scan with that many segments per row; 0 is Hillis-Steele."""

    op: str
    arg: Expr
    carry: Expr
    lanes: int = 0
    reverse: bool = False  # rscan_*: from the row's end (element j combines j..w-1, then carry)
    tables_once: bool = True  # blocked: the Gather tables built once per chunk width (0: every chunk)


@dataclass(frozen=True)
class RowLast(Expr):
    """``row_last(v)``: the last element of each row of a tile (the carry of a scan);
    ``row_first(v)`` (``first``): the first (the carry of a reverse scan)."""

    arg: Expr
    first: bool = False


@dataclass(frozen=True)
class Pick(Expr):
    """``pick(x, t, idx[, ignore])``: per row of a rows tile, ``x[row, idx[row]]`` (an index
    gather); with ``ignore``, a row whose index is that value reads nothing and gives 0
    (cross entropy's ignore_index padding)."""

    tensor: str
    at: str
    index: str
    ignore: int | None = None


@dataclass(frozen=True)
class GatherRows(Expr):
    """``gather_rows(x, t, idx, dim)``: in a rows loop, row ``g`` of the tile is row
    ``(g // K) * B + idx[g % K]`` of ``x`` viewed as rows of the loop's width, with
    ``K = numel(idx)`` and ``B = size(x, dim)`` (index_select / embedding); an index outside
    ``[0, B)`` stops the kernel (``Trap()``)."""

    tensor: str
    at: str
    index: str
    dim: int


@dataclass(frozen=True)
class GatherCols(Expr):
    """``gather_cols(x, at, idx)``: in a rows loop over ``idx`` ([N, K]), element ``(g, j)`` is
    ``x[g, idx[g, j]]`` with ``x`` seen as ``[N, size(x, -1)]`` (gather / take_along_dim on the
    last dim); an index outside ``[0, size(x, -1))`` stops the kernel (``Trap()``), or with
    ``wrap`` is taken modulo ``size(x, -1)`` as Python's ``%`` (take_along_dim's remainder)."""

    tensor: str
    at: str
    index: str
    wrap: bool = False
    shared: bool = False  # select_cols(x, at, idx): one index list for every row, x[g, idx[j]]


@dataclass(frozen=True)
class IndexAddRows(Expr):
    """``index_add_rows(acc, src, t, idx, dim)``: the tile ``acc`` of a rows loop over the
    result (the loop's tensor seen as ``[O, B, W]`` around ``dim``, ``B`` its size on ``dim``)
    plus, for every ``k`` in index order, row ``o * K + k`` of ``src`` added into row
    ``o * B + idx[k]`` (index_add; ``K = numel(idx)``). Deterministic: each
    result row is owned by one core and sums its matches in ascending ``k``; an index outside
    ``[0, B)`` stops the kernel (``Trap()``)."""

    arg: Expr
    tensor: str
    at: str
    index: str
    dim: int


@dataclass(frozen=True)
class LoadRowsBcast(Expr):
    """``load_rows_bcast(x, at, d)``: in a rows loop, row ``g`` of the tile is row
    ``(g // d) % R`` of ``x`` seen as ``R`` rows of the loop's width (``d`` a host scalar: a
    product of sizes). An operand broadcast over the loop's leading dims on both sides of a
    block of its own (``[A, 1, C]`` and ``[1, B, C]`` against ``[A, B, C]``).

    ``load_rows_bcast(x, at, d, n, p, o[, m, q])``: the ``R = n`` rows are a window of ``x``,
    row ``j`` starting at element ``o + (j // m) * q + (j % m) * p`` (``m = n`` when not given:
    ``o + j * p``); a causal-mask buffer sized for the longest sequence and sliced
    ``bias[:, :, :T, :T]``, or per head (``m = T`` rows a block, blocks ``q = L * L`` apart);
    host scalars the tiling checks."""

    arg: Expr
    tensor: str
    at: str
    window: tuple[Expr, Expr, Expr, Expr, Expr] | None = None  # (n, p, o, m, q)


@dataclass(frozen=True)
class LoadPerRowEvery(Expr):
    """``load_per_row(v, at, d)``: in a rows loop, row ``g`` of the tile takes the value
    ``v[(g // d) % numel(v)]`` (``d`` a host scalar: a product of sizes). A per-channel operand
    (``[1, C, 1, 1]``) against rows over the ``[N*C*H, W]`` view of an NCHW tensor: ``d = H``,
    so thousands of rows, not ``C``, share the cores."""

    arg: Expr
    tensor: str
    at: str


@dataclass(frozen=True)
class LoadBcastEvery(Expr):
    """``load_bcast_every(v, at, d)``: in a rows loop of whole rows, a column vector (one value
    per column, the same for every row) whose column ``c`` takes ``v[(c // d) % numel(v)]``
    (``d`` a host scalar). A per-channel ``[C]`` operand against rows that are whole ``[C, L]``
    planes of an ``[N, C, L]`` tensor is ``d = L``: built once per core, not read per row."""

    arg: Expr
    tensor: str
    at: str


@dataclass(frozen=True)
class LoadEvery(Expr):
    """``load_every(v, at, d)``: in a rows loop (plain, ``dims=`` or ``groups=``), the element
    of flat index ``f`` of the loop's tensor takes ``v[(f // d) % numel(v)]`` (``d`` a host
    scalar: a product of sizes). A per-channel operand inside the rows: GroupNorm's ``[C]``
    weight against group rows of ``[N, C, H, W]`` is ``d = H * W``: runs of ``d`` elements share
    a value, a row meets ``W / d + 1`` of them."""

    arg: Expr
    tensor: str
    at: str


@dataclass(frozen=True)
class LoadSlice(Expr):
    """``load_slice(x, at, col)``: a column window of ``x``. In a rows loop of ``N`` rows of
    width ``W``, ``x`` is seen as ``N`` rows of pitch ``P = numel(x) / N`` and row ``g`` of the
    tile is ``x[g * P + col + c0 :][:w]`` (``c0``, ``w``: the chunk's columns); in a tiles loop
    ``x`` is one row and the tile is ``x[col + g :][:n]``. ``col`` is a host scalar (constants,
    sizes: ``size(x, -1) / 2``); the tiling checks that it is a whole number and that the
    window lies inside ``x``'s rows (chunk, split, narrow and basic slicing, SwiGLU's halves)."""

    arg: Expr
    tensor: str
    at: str


@dataclass(frozen=True)
class Index(Expr):
    """``g[i]`` (stop = i + 1) or ``g[a:b]`` on a group of per-row values (or members)."""

    arg: Expr
    start: int
    stop: int


@dataclass(frozen=True)
class Sinkhorn(Expr):
    """``sinkhorn(g, n, iters)``: g holds n x n per-row matrices (member i*n + j); ``iters``
    times normalise rows then columns (the start, e.g. exp(logits), is the caller's)."""

    arg: Expr
    n: int
    iters: int


# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class Stmt:
    loc: Loc


@dataclass(frozen=True)
class Assign(Stmt):
    target: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    """``store(y, at, value)``: copy a UB value out to the tile of ``y`` addressed by ``at``;
    at top level ``store(y, value)`` writes a scalar (``at`` is empty)."""

    tensor: str
    at: str
    value: Expr
    part: int | None = None  # tiles of chunks(t, S, parts=P): which part of the output row


@dataclass(frozen=True)
class InnerLoop(Stmt):
    """``for c in chunks(t, size)`` (column chunks of a rows tile) or
    ``for k in steps(t)`` (the reduced axis of a slabs tile)."""

    kind: str  # "chunks" | "steps"
    var: str
    parent: str
    size: str | int | None  # chunk size (tunable name or literal); None for steps
    body: tuple[Stmt, ...]
    parts: int = 1  # chunks(t, S, parts=P): each row is P equal parts, chunked in step
    reverse: bool = False  # chunks(t, S, reverse=True): the last chunk first (reverse scans)
    hold: str | int | None = None  # chunks(t, S, hold=H): its first H chunks of each load kept in UB


@dataclass(frozen=True)
class Loop:
    """The distribution loop: how the work is split over cores and tiles.

    - ``tiles(x, tile=T, cores=C)``: x flattened; tiles of T elements.
    - ``rows(x, rows=R, cores=C, dims=d)``: x as [N, W] with W the product of the last d
      dims; tiles of R whole rows (each row padded to 32 B in UB).
    - ``slabs(x, dim=a, tile=T, cores=C)``: x as [A, K, B] around axis a; tiles of T
      contiguous elements of B at one index of A; ``steps`` walks K.
    """

    kind: str
    var: str
    tensor: str
    tile: str | int  # TILE / ROWS: tunable name or literal
    cores: str | int | None  # tunable name, literal, or None for all cores
    dim: int  # rows: trailing dims forming a row; slabs: the reduced axis
    depth: str | int  # queue depth for every load/store queue
    body: tuple[Stmt, ...]
    loc: Loc
    groups: int = 1  # rows: each row of the trailing dims is split into this many rows
    axis: int = -1  # rows(axis=a): row k is every element with index k on axis a (strided)
    window: tuple = (0, 0, 0)  # windows: (kernel, stride, padding), each an int or a tuple per pooled dim
    chunk: str | int | None = None  # windows: output columns per tile (tunable or literal)
    fill: float = 0.0  # windows: the value read outside the input (padding)
    combine: str = ""  # windows: "sum"/"max" = the taps fold with it, (kd, kh) rows combined first
    reuse: bool = False  # windows(reuse=True): the tile's input rows staged once per kd, all kh read them
    step_rows: str | int | None = None  # slabs(rows=R): R steps of K per copy, folded after the steps
    flat: bool = False  # rows/slabs(flat=True): a tile's whole rows read as one 512 B-aligned burst (lowering/compute_flat.py)
    carry: bool = False  # windows(carry=True): what the next tile shares kept in UB (1-D halo, 2-D rows, 3-D planes)
    inplace: bool = False  # rows(inplace=True): the tile store written into the loaded tile's slot (a bound queue)
    block_max: bool = False  # slabs(rows=R, block_max=True): online log-sum-exp steps with one max per block of R (lowering/step_blockmax.py)
    ceil: bool = False  # windows(ceil=True): PyTorch's ceil_mode output size (windows may end past the padding)
    dilation: int | tuple = 1  # windows(dilation=): taps this far apart (an int, or a tuple per pooled dim)
    split: str | int | None = None  # slabs(rows=R, split=S): K cut into S slices on their own cores, partials combined after a SyncAll (lowering/split_k.py)
    #: slabs(tile=T, hold=True): every step of K in one block of T elements (K x T/K positions), copied
    #: once a tile and read by every steps loop from UB (x read once); step_rows is then the tile
    hold: bool = False


@dataclass(frozen=True)
class Operand:
    """A matmul operand: ``x`` or ``matrix(x, split)`` (x viewed as
    [prod(dims[:split]), prod(dims[split:])]); ``transpose``: stored K x M (A) / N x K (B)."""

    tensor: str
    transpose: bool
    split: int | None
    loc: Loc


Size = str | int  # a tunable name or an integer literal


@dataclass(frozen=True)
class CubeStage:
    """``for blk in blocks(a, b, ...)``: output blocks of C = A·B over the cube cores, K staged
    GM -> L1 (``k_stages``) -> L0A/L0B (``k_steps``), ``mmad`` into the L0C ``accumulator``,
    Fixpipe to ``target`` (optionally ReLU and an fp32 -> fp16/bf16 conversion)."""

    var: str
    a: Operand
    b: Operand
    m: Size
    n: Size
    order: Size
    group: Size
    split_k: Size
    cores: Size | None
    acc_depth: Size
    k_l1: Size
    stages: Size
    k_l0: Size
    l0_depth: Size
    target: str  # Out tensor or workspace written by Fixpipe
    relu: bool
    out_dtype: str  # dtype of the stored value (f32: no conversion)
    batched: bool
    loc: Loc
    store_loc: Loc
    tail: Size = 0  # 1: split the last, partial wave's blocks along N so every core has work
    a_whole: Size = 0  # 1: a block's whole A panel (bm x K) in L1 at once, kept while the next block shares it
    b_whole: Size = 0  # 1: the same for the B panel (K x bn)
    b_ahead: Size = 0  # with b_whole: the held panel as one L1 piece per K stage, and this many pieces of the
    # core's next panel loaded while the current run computes (0: the panel as one copy, loaded when it changes)
    b_hold: Size = 0  # with b_whole (not b_ahead): only b_hold x 64 rows of the panel's K range are held (whole
    # K steps); the other K steps stream their B rows GM -> L1 through the stage ring (0: all held)
    fix_defer: Size = 0  # d >= 1 (with acc_depth 2): a block's Fixpipe is issued after the next block's d-th K
    # stage, so the copies issued before it keep the HBM channel first (0: right after the block)
    bias: str | None = None  # In tensor of N values: the accumulator starts from it (bias table, Mmad with bias)
    run: Size = 1  # blocks per run: each core takes `run` consecutive blocks of the order, runs dealt round-robin
    fix_split: Size = 0  # 1 (with acc_depth 1): a block's first and last K stages run per column half, each
    # half's Fixpipe overlapping the other half's Mmads (explicit M_FIX / FIX_M flags per half)
    ordered_split: str | None = None  # fp32 workspace: the K splits combined through it in split order, in this launch
    tile_m: Size = 0  # L0C tiles of tile_m x tile_n (0: the block's size): a block larger than one tile
    tile_n: Size = 0  # keeps its tiles' fp32 partial sums in L1 between K stages (Fixpipe L0C -> L1, L1 -> L0C)

    @property
    def l1_acc(self) -> bool:
        """Is L1 accumulation possibly on (a tile size given)? Off, none of its code is emitted."""
        return any(isinstance(x, str) or int(x) > 0 for x in (self.tile_m, self.tile_n))


@dataclass(frozen=True)
class Workspace:
    """``name = workspace(f32)``: a GM buffer one stage writes and a later one reads."""

    name: str
    dtype: str
    loc: Loc
    ring: Size = 0  # >= 1: a ring of that many blocks per AI Core, the stages in one mixed launch


@dataclass(frozen=True)
class Program:
    name: str
    category: str
    params: tuple[Param, ...]
    tunables: tuple[Tunable, ...]
    loop: Loop | None  # the first distribution loop (all loops share its header); None: cube only
    source: str
    loc: Loc
    doc: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)
    top: tuple = ()  # the stages in order: CubeStage, Loop, and scalar Assign / Store between them
    lines: dict = field(default_factory=dict, compare=False, hash=False)  # line -> text for comments
    workspaces: tuple[Workspace, ...] = ()
    decorator: str = "kernel"  # "kernel" | "cube_kernel" (its stages launch on the cube + vector cores)

    @property
    def stages(self) -> list[CubeStage | Loop]:
        """The cube and vector stages in execution order."""
        return [x for x in self.top if isinstance(x, (CubeStage, Loop))]

    @property
    def cube(self) -> CubeStage | None:
        """The cube stage, if any."""
        return next((x for x in self.top if isinstance(x, CubeStage)), None)

    @property
    def vector(self) -> Loop | None:
        """The (last) vector stage, if any."""
        loops = self.loops
        return loops[-1] if loops else None

    def dtype_of(self, name: str) -> str:
        """Dtype of a parameter or workspace."""
        for w in self.workspaces:
            if w.name == name:
                return w.dtype
        return self.param(name).dtype

    def is_workspace(self, name: str) -> bool:
        return any(w.name == name for w in self.workspaces)

    def line_text(self, line: int) -> str:
        """The statement on ``line`` as the generated ``// DSL line N:`` comments show it
        (re-printed from the syntax tree and sanitised by the parser, never the raw source)."""
        return self.lines.get(line, "")

    @property
    def loops(self) -> list[Loop]:
        return [x for x in self.top if isinstance(x, Loop)] or ([self.loop] if self.loop else [])

    def all_stmts(self) -> list[Stmt]:
        """Every statement: top-level ones and those of every loop (inner loops included)."""
        out: list[Stmt] = []
        for x in self.top or (self.loop,):
            if isinstance(x, Loop):
                out += list(walk_stmts(x.body))
            elif isinstance(x, Stmt):
                out.append(x)
        return out

    @property
    def inputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "in"]

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "out"]

    @property
    def scalars(self) -> list[Param]:
        return [p for p in self.params if p.kind == "scalar"]

    @property
    def tensors(self) -> list[Param]:
        return [p for p in self.params if p.kind != "scalar"]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def tunable(self, name: str) -> Tunable:
        for t in self.tunables:
            if t.name == name:
                return t
        raise KeyError(name)

    def defaults(self) -> dict[str, int]:
        return {t.name: t.default for t in self.tunables}


def walk_exprs(e: Expr):
    """Yield ``e`` and all its sub-expressions, depth first, operands before users."""
    if isinstance(e, (Unary, LeakyRelu, Cast, RowReduce, GridReduce, RowLast, Index, Sinkhorn,
                      IndexAddRows, LoadRowsBcast, LoadPerRowEvery, LoadEvery, LoadBcastEvery, LoadSlice)):
        yield from walk_exprs(e.arg)
    elif isinstance(e, Power):
        yield from walk_exprs(e.base)
    elif isinstance(e, Scan):
        yield from walk_exprs(e.arg)
        yield from walk_exprs(e.carry)
    elif isinstance(e, RowPosition):
        yield from walk_exprs(e.arg)
        yield from walk_exprs(e.count)
    elif isinstance(e, (Binary, Compare)):
        yield from walk_exprs(e.lhs)
        yield from walk_exprs(e.rhs)
    elif isinstance(e, Select):
        yield from walk_exprs(e.cond)
        yield from walk_exprs(e.if_true)
        yield from walk_exprs(e.if_false)
    if isinstance(e, LoadRowsBcast) and e.window is not None:
        for w in e.window:
            yield from walk_exprs(w)
    yield e


def walk_stmts(stmts):
    """Yield every statement, descending into inner loops."""
    for s in stmts:
        yield s
        if isinstance(s, InnerLoop):
            yield from walk_stmts(s.body)


def stmt_exprs(s: Stmt):
    """The top-level expressions a statement evaluates (none for an inner loop)."""
    if isinstance(s, (Assign, Store)):
        yield s.value


def body_exprs(stmts):
    """Every expression node in a body, inner loops included."""
    for s in walk_stmts(stmts):
        for e in stmt_exprs(s):
            yield from walk_exprs(e)


def program_exprs(p: Program):
    """Every expression node of a program: top-level statements and all loops."""
    for s in p.all_stmts():
        for e in stmt_exprs(s):
            yield from walk_exprs(e)
