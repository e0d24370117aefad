"""The builtin proposer for the cube path: matmul family and the mHC kernels.

Templates (``templates/cube_*.dsl``) are ``@cube_kernel`` programs with the op-specific
parts filled in by string formatting: operand names and layouts (transposed A/B, batched),
the Fixpipe store (dtype conversion, ReLU) or the vector-stage epilogue (bias, activation,
scaling, residual add, split-K reduction). Where two structures make sense — the result
written by the cube alone vs through a workspace with split-K and a vector stage — both are
proposed as separate candidates.

:class:`CubeProposer` serves a task whose reference is a registry cube op's computation
(matched by :mod:`.recipe_match`, never by name), or, failing that, any task whose traced
reference is one matrix product of two inputs (``mm``, ``bmm``, ``matmul``, ``addmm``, ``mv``,
``nn.Linear``..., at fp32, fp16 or bf16) optionally followed by elementwise ops that the
epilogue can express (:func:`traced_spec`, read by :mod:`.graph.matmul_form`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from importlib import resources

import torch

from ..tasks.aten import MATMUL_OPS
from ..tasks.registry_cube import cube_kind, cube_task_names
from ..tasks.task import Task
from .graph import shape_sets
from .graph.emit import RESERVED
from .graph.matmul_form import UNARY, MatmulForm, matmul_form, row_bias
from .graph.names import doc_text, dsl_name, words_of
from .graph.patterns import fit_formula, host_candidates
from .graph.trace import Unsupported, trace_task
from .proposer import Candidate, Declined
from .recipe_match import Match, first_match

DTYPE_DSL = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
#: ``MatmulSpec.order``'s type of a Python-number input (a ``Scalar[f32]`` parameter)
SCALAR = "scalar"
CORES = "8, 12, 16, 20, 24"
SPLITS = "1, 2, 3, 4, 6, 8"


def _template(name: str) -> str:
    return resources.files("ascendcraft.search").joinpath("templates", f"{name}.dsl").read_text()


@dataclass(frozen=True)
class MatmulSpec:
    """What a matmul-family kernel needs: operands, layouts, output, epilogue."""

    a: str
    b: str
    dtype: str
    out_dtype: str
    transpose_a: bool = False
    transpose_b: bool = False
    batched: bool = False
    extra: tuple[tuple[str, str], ...] = ()  # (name, dsl dtype) of further inputs, in order
    relu: bool = False  # an epilogue Fixpipe can do on its own
    epilogue: str = ""  # vector-stage expression of v (fp32 result) and cc (chunk), "" = none
    doc: str = ""
    order: tuple[tuple[str, str], ...] = ()  # every input (name, dsl dtype or SCALAR) in the task's order
    rounded: bool = False  # the reference rounds the product to the output dtype before the epilogue
    rounded_epilogue: str = ""  # the epilogue of v already so rounded (rounded_vec's workspace), "" = epilogue
    bias_rounded: bool = False  # the reference rounds product + bias to the output dtype (addmm's one
    # rounding) before the rest of the epilogue: what Fixpipe writes to a half workspace
    bias: str = ""  # input of N values the cube can add (bias table), "" = none
    bias_relu: bool = False  # ReLU after that bias (Fixpipe)
    bias_epilogue: str = ""  # vector epilogue of v after that bias, "" = none (the cube finishes alone)
    half_workspace: bool = False  # the rest of the epilogue may read product + bias rounded to the output
    # dtype: within the tolerance when no cancellation follows (GELU: yes; + residual or a bias after
    # the rounding: no — modeled wrong on signed data)


def _params(spec: MatmulSpec) -> str:
    if spec.order:
        ins = [f"{n}: Scalar[f32]" if dt == SCALAR else f"{n}: In[{dt}]" for n, dt in spec.order]
        return ", ".join(ins + [f"c: Out[{spec.out_dtype}]"])
    ins = [f"{spec.a}: In[{spec.dtype}]", f"{spec.b}: In[{spec.dtype}]"]
    ins += [f"{n}: In[{dt}]" for n, dt in spec.extra]
    return ", ".join(ins + [f"c: Out[{spec.out_dtype}]"])


def _flags(spec: MatmulSpec) -> str:
    f = ""
    if spec.transpose_a:
        f += ", transpose_a=True"
    if spec.transpose_b:
        f += ", transpose_b=True"
    if spec.batched:
        f += ", batched=True"
    return f


#: the templates' default output block (BM x BN) and core count, for the split-K default
_BLOCK_M, _BLOCK_N, _CUBE_CORES = 128, 256, 24
#: L1 bytes of a cube core the defaults plan with (910B: 512 KiB; the checker has the SoC's figure)
_L1_BYTES = 512 * 1024


def split_default(bt: int, m: int, n: int, k: int) -> int:
    """Default K splits of the split-K candidate for a ``bt`` x (``m`` x ``k`` @ ``k`` x ``n``)
    product: 1 when the output blocks fill the cube cores; otherwise the split (of ``SPLITS``,
    each split at least 1024 deep) that needs the fewest block-times, ``ceil(blocks x s /
    cores) / s`` — K-large shapes with few output blocks put the idle cores on K."""
    tiles = bt * -(-m // _BLOCK_M) * -(-n // _BLOCK_N)
    if tiles >= _CUBE_CORES:
        return 1
    best, best_t = 1, 1.0
    for s in (int(x) for x in SPLITS.split(",")):
        t = -(-tiles * s // _CUBE_CORES) / s
        if k // s >= 1024 and t < best_t - 1e-9:
            best, best_t = s, t
    return best


def tail_default(bt: int, m: int, n: int, k: int) -> int:
    """Default of the tail split (``TAIL``): on (1) unless M is a few rows, or K is short and the
    blocks fill many waves — there the pieces' extra reads of the A panel cost more than the
    idle cores of one last wave (modeled: matmul_small_m M 16, matmul_batched K 512 over 43
    waves)."""
    tiles = bt * -(-m // _BLOCK_M) * -(-n // _BLOCK_N)
    return 1 if m >= 64 and (k >= 1024 or tiles < 8 * _CUBE_CORES) else 0


def cores_default(bt: int, m: int, n: int, k: int) -> int:
    """Default cube core count (``CORES``): all of them, except for a few-row M (decode-like,
    HBM-bound: each block streams its B panel once) where the count of ``CORES`` that leaves
    the fewest idle block slots, ``ceil(blocks / c) x c``, wins (larger on ties): in the model
    a core's HBM share is the chip's over the cores running, so even blocks per core beat
    more cores (matmul_small_m: 64 blocks on 16 cores, not 3 waves of 24)."""
    choices = [int(x) for x in CORES.split(",")]
    if m >= 64:
        return max(choices)
    tiles = bt * -(-m // _BLOCK_M) * -(-n // _BLOCK_N)
    return min(choices, key=lambda c: (-(-tiles // c) * c, -c))


def fix_split_default(bt: int, m: int, n: int, k: int) -> int:
    """Default of ``FSPLIT`` (a block's first and last K stage per column half, each half's Fixpipe
    beside the other half's Mmads): on (1) when a block has a K stage between its first and last
    (K above two default 256-deep stages), where the per-half Mmads and A reloads of two stages
    are a small share of the block and the hidden Fixpipe is the M pipe's largest idle time;
    off when every stage is split (modeled, model 2.1: matmul 4096^3 446.3 -> 433.4 us,
    matmul_fp32 230.8 -> 219.7 us; matmul_batched, K 512 in two stages, 166.0 -> 171.8 us).
    Runs (``run_default`` > 1) take 2 instead, every K stage per row half: each Fixpipe then writes
    whole 256-column rows (512 B fp16 GM bursts) where column halves write 256 B ones, half of them
    off the 512 B alignment (modeled, model 2.1: matmul_batched 133.3 -> 128.8 us, HBM channel
    117.5 -> 111.0 us); with every stage split, long K pays for the doubled Mmads (matmul 4096^3
    433.4 -> 447.1 us), so 1 stays the default there."""
    return 1 if k > 2 * 256 else 0


def run_default(bt: int, m: int, n: int, k: int, transpose_b: bool = False, esize: int = 2) -> int:
    """Default of ``RUN`` (consecutive blocks per core): for many short-K blocks (eight waves or
    more, the whole B panel of a 256-column block, K rows padded to 16, beside two A stages in
    L1, and B not fp32 stored K x N) the largest of 2, 4, 8 that a block column holds — the
    direct candidate then walks each core down its own run of a column holding the B panel
    (col-major, ``BW``), with the split Fixpipe, since once B is read once per run the
    Fixpipe in series with the Mmads is the largest remaining cost; else 1 (modeled, model
    2.1: matmul_batched, 32 x 1024 x 512 x 1024, 166.0 -> 152.2 us; runs without the split
    Fixpipe 183.8 us)."""
    n_m = -(-m // _BLOCK_M)
    tiles = bt * n_m * -(-n // _BLOCK_N)
    fits = (-(-k // 16) * 16) * _BLOCK_N * esize + 2 * _BLOCK_M * 256 * esize <= _L1_BYTES
    if tiles < 8 * _CUBE_CORES or not fits or not (transpose_b or esize == 2):
        return 1
    return max([1] + [r for r in (2, 4, 8) if r <= n_m])


def b_ahead_default(bt: int, m: int, n: int, k: int, esize: int = 2) -> int:
    """Default of ``BA`` (pieces of the core's next B panel loaded ahead) for a candidate that runs
    blocks holding the B panel (``RUN`` > 1): 1 when the held panel's default K stages (256 deep)
    plus one more, beside two A stages, fit L1 (512 KiB) and the queue's 8 buffers; else 0. The
    next panel's first piece then loads during the run, an eighth of its rows per K stage, and
    the rest in its last block, instead of the whole panel after the run (modeled, model 2.1:
    matmul_batched 152.2 -> 135.8 us; 2 or more ahead do not fit there)."""
    pieces = -(-k // 256)
    fits = (pieces + 1) * 256 * _BLOCK_N * esize + 2 * _BLOCK_M * 256 * esize <= _L1_BYTES
    return 1 if fits and pieces + 1 <= 8 else 0


HOLDS = "0, 4, 6, 8, 10, 12, 13, 14, 16, 20, 24"
"""Values of ``BH`` (b_hold: K rows of the B panel held, in 64s; 0 = the whole panel)."""

def held_panel_plan(bt: int, m: int, n: int, k: int, transpose_b: bool = False, esize: int = 2) -> dict | None:
    """The direct candidate's structure for a tall product with a narrow N (one column block, at
    most 256 columns, 48 or more 64-row blocks): every block spans all of N, so A is read once; the
    B panel stays in L1 (``BW``) beside two 64 x 256 A stages, and 64-row blocks fit two L0C buffers
    (``ACCD`` 2, the Fixpipe beside the next block's Mmads); the last partial wave is cut along M
    (``TAIL`` 2). When the panel does not fit, as many 64-row K groups as do are held (``BH``) and the
    other K steps stream 32 rows a copy from L2 (``BK`` 32), the Fixpipe deferred to the next
    block's end (``FDEF`` 8) so that it fills the channel time those path-bound copies leave — but
    only while at most a quarter of K streams. None: not such a product (or too deep a K), the
    column-half structure of :func:`b_whole_default` or the defaults apply. Modeled, model 2.1:
    matmul_tall_skinny (1024 deep, 832 rows held) 81.7 -> 76.5 us (0.90x -> 0.96x); 32768 x 512 @
    512 x 256 0.94x -> 1.13x; 16384 x 1024 @ 1024 x 192 0.91x -> 1.10x; 1536 deep (45% streamed)
    0.87x -> 0.59x, hence the quarter."""
    rows = -(-m // 64)  # 64-row blocks per batch
    if n > 256 or bt * rows < 2 * _CUBE_CORES or (not transpose_b and esize == 4):
        return None
    bn16 = -(-n // 16) * 16
    a_stages = 2 * 64 * 256 * esize
    # batched: runs of consecutive blocks (within a batch) per core, so a core loads a batch's panel
    # once a run, not at nearly every block (modeled: bmm 16 x 2048 x 1024 @ 1024 x 256 0.71x -> 0.88x)
    run = 1 if bt == 1 else 4 if rows >= 8 else 2 if rows >= 4 else 1
    if -(-k // 16) * 16 * bn16 * esize + a_stages <= _L1_BYTES:
        return dict(bh=0, bk=64, fdef=0, run=run)
    # streamed steps of 32 K rows; 64 for B stored N x K, whose stream copies are N rows of BK values
    # each (64 B bursts at 32: modeled 0.93x -> 0.94x for a bf16 nn.Linear(1024, 256) on 32768 rows)
    bk = 64 if transpose_b else 32
    ring = 2 * bk * bn16 * esize  # two stream buffers
    held = (_L1_BYTES - a_stages - ring) // (bn16 * esize) // 64
    bh = max([0] + [int(h) for h in HOLDS.split(",") if 0 < int(h) <= held])
    if bh == 0 or bh * 64 < 0.75 * k:
        return None
    return dict(bh=bh, bk=bk, fdef=8, run=run)


GROUPS = "2, 3, 4, 6, 8, 12, 16"


def group_default(bt: int, m: int, n: int, k: int) -> int:
    """Default swizzle group (``GROUP``, block rows per group) of the direct candidate: the
    one whose waves (``cores_default`` consecutive blocks in swizzled order) touch the fewest
    panel bytes, sum over waves of distinct A panels x BM + distinct B panels x BN - the
    working set the cores of one wave share through L2. Ties (every group touches the same
    panels: one wave, one block column, or a grid of about two waves) go to the largest group,
    a walk down whole block columns: each B panel a wave fetches is then shared by every block
    row of its column, the most concurrent readers per HBM fetch (modeled, model 2.1:
    matmul_ragged, 8 x 4 blocks in two waves, GROUP 4 -> 16: 18.5 -> 17.4 us, L2 hits 82 -> 86%;
    one-wave and one-column shapes unchanged). Modeled, model 2.1: transpose_a/ab/b (16 x 8
    blocks) 6 instead of 4 gives 1.5-2.4% less time. Not a rule here: 12 at 4096^3 (32 x 16
    blocks) models 429.7 us vs 433.4 us for the rule's 6, but 12 loses 1.6% at 16 x 8 (121.8 vs
    119.9 us) and the panel count prefers 6 and 8 there; no panel-count rule tried picks both
    (``benchmarks/cube_breakdown.py OP --sweep GROUP=...``)."""
    n_m, n_n = -(-m // _BLOCK_M), -(-n // _BLOCK_N)
    cores = cores_default(bt, m, n, k)

    def panels(g: int) -> int:
        total = 0
        wave_m: set[tuple[int, int]] = set()
        wave_n: set[tuple[int, int]] = set()
        for w in range(bt * n_m * n_n):
            b, rest = divmod(w, n_m * n_n)
            grp, idx = divmod(rest, g * n_n)
            rows = min(g, n_m - grp * g)
            wave_m.add((b, grp * g + idx % rows))
            wave_n.add((b, idx // rows))
            if (w + 1) % cores == 0 or w + 1 == bt * n_m * n_n:
                total += len(wave_m) * _BLOCK_M + len(wave_n) * _BLOCK_N
                wave_m, wave_n = set(), set()
        return total

    if bt * n_m * n_n > 4096:  # many blocks: the old default (the count is not worth the time)
        return 4
    return min((int(x) for x in GROUPS.split(",")), key=lambda g: (panels(g), -g))


def a_whole_default(bt: int, m: int, n: int, k: int, transpose_a: bool = False, esize: int = 2) -> int:
    """Default of ``AW`` (the whole A panel of a block in L1, one GM copy): on (1) for a
    few-row M (one block row, A stored M x K) whose panel, rows padded to 16, fits beside the
    two B stages of the default block (``_BLOCK_N`` x 256 deep) in L1 (512 KiB): each K stage
    then copies B only, and the panel is loaded once per core, not once per stage and block
    (modeled, model 2.1: matmul_small_m, A 16 x 8192)."""
    rows = -(-min(m, _BLOCK_M) // 16) * 16
    fits = rows * (-(-k // 16) * 16) * esize + 2 * 256 * _BLOCK_N * esize <= _L1_BYTES
    return 1 if m < 64 and not transpose_a and fits else 0


def b_whole_default(bt: int, m: int, n: int, k: int, transpose_b: bool = False, esize: int = 2) -> int:
    """Default of ``BW`` (the whole B panel of a block in L1, one GM copy): on (1) for a
    narrow N (at most two 128-column blocks) under many block rows (two waves or more),
    where the panel, K rows padded to 16, fits beside two A stages (128 x 256) in L1 and B
    is not fp32 stored K x N. With it the direct candidate runs 128-column blocks in
    row-major order, so with an even core count a core keeps its B panel for all its blocks
    and each K stage copies A only; every A block is then read twice, once per column half.
    Used where :func:`held_panel_plan` declines (a K too deep for most of a full-width panel:
    32768 x 1536 @ 1536 x 256, 0.87x modeled); matmul_tall_skinny took it before that plan
    (81.7 us, 0.90x; the plan: 76.5 us)."""
    fits = (-(-k // 16) * 16) * 128 * esize + 2 * 128 * 256 * esize <= _L1_BYTES
    many_rows = bt * -(-m // _BLOCK_M) >= 2 * _CUBE_CORES
    return 1 if n <= 256 and many_rows and fits and (transpose_b or esize == 2) else 0


def spec_dims(task: Task, spec: MatmulSpec) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of ``spec``'s product at ``task``'s shapes (None if not found)."""
    if spec.order:
        shapes = {nm: tuple(x.shape) for (nm, dt), x in zip(spec.order, task.inputs, strict=False) if dt != SCALAR}
    else:
        shapes = {x.name: tuple(x.shape) for x in task.tensor_inputs}
    sa, sb = shapes.get(spec.a), shapes.get(spec.b)
    if sa is None or sb is None or len(sa) < 2 or len(sb) < 2:
        return None

    def view(sh: tuple[int, ...]) -> tuple[int, int, int]:
        if spec.batched:  # every dim before the matrix is batch (4-D heads, 5-D)
            return math.prod(sh[:-2]), sh[-2], sh[-1]
        return 1, math.prod(sh[:-1]), sh[-1]

    bt, ra, ca = view(sa)
    _, rb, cb = view(sb)
    m, k = (ca, ra) if spec.transpose_a else (ra, ca)
    n = rb if spec.transpose_b else cb
    return bt, m, n, k


def template_fields(name: str, spec: MatmulSpec, dims: tuple[int, int, int, int] | None) -> dict:
    """The fields every matmul template takes for ``spec``: names, flags and the tunables'
    shape-aware defaults at ``dims`` (batch, M, N, K) of the task's shapes."""
    common = dict(name=_kernel_name(name), params=_params(spec), doc=doc_text(spec.doc), a=spec.a, b=spec.b,
                  a_name=spec.a, b_name=spec.b, flags=_flags(spec), cores=CORES,
                  cores_default=cores_default(*dims) if dims else 24, out="c", holds=HOLDS,
                  tail_default=tail_default(*dims) if dims else 1, groups=GROUPS,
                  group_default=group_default(*dims) if dims else 4,
                  a_whole_default=a_whole_default(*dims, spec.transpose_a, 4 if spec.dtype == "f32" else 2)
                  if dims else 0)
    esize = 4 if spec.dtype == "f32" else 2
    held = held_panel_plan(*dims, spec.transpose_b, esize) if dims else None
    if held is not None:  # a tall product with one narrow column block: rows of 64, the panel held
        common.update(b_whole_default=1, bn_default=_BLOCK_N, order_default="row_major", fix_split_default=0,
                      run_default=held["run"], b_ahead_default=0, bm_default=64, bk_default=held["bk"],
                      acc_depth_default=2, b_hold_default=held["bh"], fix_defer_default=held["fdef"],
                      tail_default=2)
        return common
    bw = b_whole_default(*dims, spec.transpose_b, esize) if dims else 0
    run = run_default(*dims, spec.transpose_b, esize) if dims and not bw else 1
    common.update(b_whole_default=1 if run > 1 else bw, bn_default=128 if bw else _BLOCK_N,
                  order_default="col_major" if run > 1 else "row_major" if bw else "swizzled",
                  fix_split_default=2 if run > 1 else fix_split_default(*dims) if dims else 1, run_default=run,
                  b_ahead_default=b_ahead_default(*dims, esize) if dims and run > 1 else 0,
                  bm_default=_BLOCK_M, bk_default=64, acc_depth_default=1, b_hold_default=0, fix_defer_default=0)
    return common


def matmul_candidates(name: str, spec: MatmulSpec, dims: tuple[int, int, int, int] | None = None) -> list[Candidate]:
    """The direct (cube-only) candidate when Fixpipe can finish the job, and the workspace +
    vector-epilogue candidate (split-K) always; ``dims`` (batch, M, N, K) at the task's shapes
    set the split-K candidate's default split (:func:`split_default`)."""
    cands = []
    common = template_fields(name, spec, dims)
    if not spec.epilogue:
        store = "acc"
        if spec.relu:
            store = "relu(acc)"
        if spec.out_dtype != "f32":
            store = f"cast({store}, {spec.out_dtype})"
        note = ("fp32 -> " + spec.out_dtype if spec.out_dtype != "f32" else "fp32") + (", ReLU" if spec.relu else "")
        cands.append(Candidate(f"{name}/cube", _template("cube_matmul").format(
            store=store, store_note=note, **common), origin=CubeProposer.name))
        if ordered_split_ok(spec, dims):
            cands.append(ordered_splitk_candidate(name, spec, common, store, note, dims))
    epi = spec.epilogue or ("relu(v)" if spec.relu else "v")
    if spec.out_dtype != "f32":
        epi = f"cast({epi}, {spec.out_dtype})"
    if spec.bias and not spec.bias_epilogue:
        cands.append(bias_candidate(name, spec, common))
    cands.append(Candidate(f"{name}/splitk_vec", _template("cube_matmul_epilogue").format(
        epilogue=epi, splits=SPLITS, split_default=split_default(*dims) if dims else 1, **common),
        origin=CubeProposer.name))
    half_ok = spec.epilogue and spec.out_dtype != "f32" and spec.dtype == spec.out_dtype
    if half_ok and spec.rounded:
        repi = f"cast({spec.rounded_epilogue or spec.epilogue}, {spec.out_dtype})"
        cands.append(Candidate(f"{name}/rounded_vec", _template("cube_matmul_rounded").format(
            epilogue=repi, out_dtype=spec.out_dtype, acc_args="", **common), origin=CubeProposer.name))
    if half_ok and (spec.bias_rounded or spec.half_workspace) and spec.bias and spec.bias_epilogue:
        cands.append(bias_rounded_candidate(name, spec, common))
    mixed = mixed_candidate(name, spec, common, half_ok)
    if mixed is not None:
        cands.append(mixed)
    return cands


def ordered_split_ok(spec: MatmulSpec, dims: tuple[int, int, int, int] | None) -> bool:
    """Is the single-launch ordered split-K worth offering? Its output is stored by Fixpipe alone
    (no vector epilogue, no ReLU: partial sums are added) and the default split at the task's
    shapes is above 1 (few output blocks for the cube cores)."""
    if spec.epilogue or spec.relu or dims is None:
        return False
    return split_default(*dims) > 1


def ordered_splitk_candidate(name: str, spec: MatmulSpec, common: dict, store: str, note: str,
                             dims: tuple[int, int, int, int]) -> Candidate:
    """Split-K in one launch (``cube_matmul_splitk_ordered``): beside ``splitk_vec`` (partials to a
    workspace, a second launch on the vector cores to sum them), which it saves the second launch,
    the fp32 workspace round trip and the vector pass."""
    return Candidate(f"{name}/splitk_ordered", _template("cube_matmul_splitk_ordered").format(
        store=store, store_note=note, splits=SPLITS, split_default=split_default(*dims), **common),
        origin=CubeProposer.name)


def mixed_candidate(name: str, spec: MatmulSpec, common: dict, half_ok: bool) -> Candidate | None:
    """One mixed launch (AIC + 2 AIV per AI Core): the cube writes each block into a GM ring, the
    vector cores apply the epilogue to it while the cube computes the next — the two-launch
    candidates' work overlapped. The bias in the accumulator and a workspace in the output dtype
    where the two-launch form allows it (``bias_rounded_candidate``), else fp32 blocks and the whole
    epilogue on the vector cores. None without a vector epilogue, for batched products, or when a
    cube-only candidate finishes the epilogue (bias + ReLU)."""
    if not spec.epilogue or spec.batched or spec.bias_relu:
        return None
    half = half_ok and (spec.bias_rounded or spec.half_workspace) and bool(spec.bias and spec.bias_epilogue)
    if half:
        od = spec.out_dtype
        fmt = dict(ws_dtype=od, ws_store=f"cast(acc, {od})", ws_load="cast(load(mm_ws, cc), f32)",
                   ws_note=f"bias in the accumulator, rounded to {od}", acc_args=f", bias={spec.bias}",
                   epilogue=f"cast({spec.bias_epilogue}, {od})")
    else:
        epi = spec.epilogue if spec.out_dtype == "f32" else f"cast({spec.epilogue}, {spec.out_dtype})"
        fmt = dict(ws_dtype="f32", ws_store="acc", ws_load="load(mm_ws, cc)", ws_note="fp32", acc_args="",
                   epilogue=epi)
    return Candidate(f"{name}/mixed_ring", _template("cube_matmul_mix").format(**fmt, **common),
                     origin=CubeProposer.name)


def bias_rounded_candidate(name: str, spec: MatmulSpec, common: dict) -> Candidate:
    """The bias in the accumulator (bias table), the product + bias rounded to the output dtype into
    the workspace by Fixpipe (half the bytes of fp32), the rest of the epilogue on the vector cores:
    eager's addmm then activation, with no bias read and no fp32 round trip."""
    epi = f"cast({spec.bias_epilogue}, {spec.out_dtype})"
    return Candidate(f"{name}/bias_rounded_vec", _template("cube_matmul_rounded").format(
        epilogue=epi, out_dtype=spec.out_dtype, acc_args=f", bias={spec.bias}", **common),
        origin=CubeProposer.name)


def bias_candidate(name: str, spec: MatmulSpec, common: dict) -> Candidate:
    """The cube-only candidate of a bias (+ ReLU) epilogue: the bias table starts each block's
    accumulator, Fixpipe applies the ReLU and the dtype conversion — no workspace, no vector pass."""
    store = "relu(acc)" if spec.bias_relu else "acc"
    if spec.out_dtype != "f32":
        store = f"cast({store}, {spec.out_dtype})"
    note = ("fp32 -> " + spec.out_dtype if spec.out_dtype != "f32" else "fp32") + (", ReLU" if spec.bias_relu else "")
    return Candidate(f"{name}/cube_bias", _template("cube_matmul_bias").format(
        store=store, store_note=note, bias=spec.bias, **common), origin=CubeProposer.name)


#: an epilogue longer than this as one expression is refused (nested tanh-GELUs grow 5x per step)
MAX_EPILOGUE_CHARS = 4096
ACTS = {"relu": "relu({x})", "gelu": "gelu({x})", "sigmoid": "sigmoid({x})", "tanh": "tanh({x})",
        "silu": "silu({x})",
        # F.gelu(approximate="tanh"); the DSL has no such op, so its argument appears 5 times
        "gelu_tanh": "(0.5 * {x} * (1.0 + tanh(0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x}))))"}


def registry_spec(task: Task, op: str, p: dict) -> MatmulSpec | None:
    """The kernel spec of matmul-family op ``op`` of registry_cube with parameters ``p``,
    for ``task`` (whose reference computes that op)."""
    T = DTYPE_DSL.get(task.dtype)
    if T is None:
        return None
    n = op
    base = dict(a="a", b="b", dtype=T, out_dtype=T, doc=task.description + ".")
    if n in ("matmul", "matmul_tall_skinny", "matmul_large_k", "matmul_small_m", "matmul_ragged", "matmul_fp32"):
        return MatmulSpec(**base)
    if n == "matmul_batched":
        return MatmulSpec(**base, batched=True)
    if n == "matmul_transpose_a":
        return MatmulSpec(**base, transpose_a=True)
    if n == "matmul_transpose_b":
        return MatmulSpec(**base, transpose_b=True)
    if n == "matmul_transpose_ab":
        return MatmulSpec(**base, transpose_a=True, transpose_b=True)
    if n == "matmul_fp32_out":
        return MatmulSpec(**{**base, "out_dtype": "f32"})
    bias = "cast(load_bcast(bias, cc), f32)" if T != "f32" else "load_bcast(bias, cc)"
    if n == "matmul_bias_relu":
        return MatmulSpec(**base, extra=(("bias", T),), epilogue=f"relu(v + {bias})", bias="bias", bias_relu=True)
    if n == "linear_bias_gelu":
        return MatmulSpec(**{**base, "a": "x", "b": "weight"}, transpose_b=True, extra=(("bias", T),),
                          epilogue=f"gelu(v + {bias})", bias="bias", bias_epilogue="gelu(v)",
                          half_workspace=True)
    if n == "matmul_scale_residual":
        res = "cast(load(residual, cc), f32)" if T != "f32" else "load(residual, cc)"
        return MatmulSpec(**base, extra=(("residual", T),), epilogue=f"v * {float(p['alpha'])!r} + {res}")
    return None


# ---------------------------------------------------------------- task files


def traced_spec(task: Task) -> MatmulSpec | str:
    """The kernel spec of a task file whose traced reference is one matrix product of two
    inputs (any product call, operands stored as the matrix or its transpose) followed by an elementwise epilogue (:mod:`.graph.matmul_form`); else the
    reason it is not one."""
    T = DTYPE_DSL.get(task.dtype)
    if T is None:
        return f"dtype {task.dtype} has no cube DSL type"
    ins = task.tensor_inputs
    if any(s.dtype != task.dtype for s in ins):
        return "its tensor inputs do not share one dtype"
    if any(s.kind == "scalar" and not isinstance(s.value, (int, float)) for s in task.inputs):
        return "a non-numeric Python input (the matmul templates take tensors and numbers)"
    try:
        ag = trace_task(task)
    except Unsupported as e:  # not traceable: not ours
        return str(e)
    form = matmul_form(ag)
    if isinstance(form, str):
        return form
    names = _input_names(task.inputs)
    form = _sized_constants(task, form, names)
    if isinstance(form, str):
        return form
    for op in (form.a, form.b):
        if len(task.inputs[op.index].shape) < 2:  # the templates take each operand as a matrix
            return (f"operand {task.inputs[op.index].name!r} is a vector (shape "
                    f"{list(task.inputs[op.index].shape)}): the cube templates take matrices (the graph "
                    "frontend serves a product with one output column as a product and a row sum)")
    # v and relu(v) are one rounding whatever eager rounds in between (ReLU commutes with it):
    # the store's cast (Fixpipe) finishes them; any other epilogue rounds where eager rounds
    plain = _epilogue(form.steps, names, T, eager=False)
    v = _epilogue(form.steps, names, T, first=form.product_rounded)
    if len(v) > MAX_EPILOGUE_CHARS:  # each tanh-GELU step repeats its argument 5 times
        return f"the epilogue {' -> '.join(form.ops)} is {len(v)} characters as one DSL expression " \
               f"(the limit is {MAX_EPILOGUE_CHARS})"
    a = names[form.a.index]
    b = names[form.b.index]
    OT = DTYPE_DSL.get(ag.meta(ag.outputs[0])[1])  # the output's dtype: fp32 for a.float() @ b.float()
    if OT is None:
        return f"the output is {ag.meta(ag.outputs[0])[1]}, which has no cube DSL type"
    rb = row_bias(form)
    after = _epilogue(form.steps[1:], names, T, eager=False) if rb is not None else "v"
    bias_epi = _epilogue(form.steps[1:], names, T) if rb is not None else "v"
    return MatmulSpec(a, b, T, OT, transpose_a=form.a.transpose, transpose_b=form.b.transpose,
                      batched=form.batched, relu=plain == "relu(v)",
                      epilogue="" if plain in ("v", "relu(v)") else v,
                      order=tuple((n, SCALAR if x.kind == "scalar" else T) for n, x in zip(names, task.inputs,
                                                                                           strict=True)),
                      rounded=form.product_rounded,
                      rounded_epilogue=_epilogue(form.steps, names, T) if form.product_rounded else "",
                      bias=names[rb] if rb is not None else "", bias_relu=after == "relu(v)",
                      bias_epilogue="" if after in ("v", "relu(v)") else bias_epi,
                      bias_rounded=rb is not None and form.steps[0].rounded,
                      doc=f"Task file {task.name}: " + " -> ".join(form.ops) + ".")


def _sized_constants(task: Task, form: MatmulForm, names: list[str]) -> MatmulForm | str:
    """``form`` with each epilogue number that changes with the input shapes (``x.shape[0]`` in
    Python arithmetic) written as a host expression of the input sizes, found by tracing the
    reference at the reduced shape sets too (the graph frontend's rule, :func:`fit_formula`);
    else the reason it cannot be. A kernel baked at the task's shapes would be wrong at any
    other (the reduced-shape check runs the same program). ``names``: the inputs' DSL names."""
    sets = shape_sets(task)
    if len(sets) < 2:
        return form
    forms = [form]
    for shapes in sets[1:]:
        try:
            other = matmul_form(trace_task(task, shapes))
        except Unsupported as e:
            return f"at the reduced shapes {shapes} the reference cannot be traced: {e}"
        if isinstance(other, str) or len(other.steps) != len(form.steps) or \
                [s.op for s in other.steps] != [s.op for s in form.steps]:
            return f"the reference computes a different epilogue at the reduced shapes {shapes} " \
                   "(shape-dependent Python control flow)"
        forms.append(other)
    hosts = host_candidates(task, sets)
    steps = list(form.steps)
    for i, st in enumerate(steps):
        if st.index is not None or st.value is None:
            continue
        vals = [float(f.steps[i].value) for f in forms]
        if all(v == vals[0] for v in vals):
            continue
        expr = fit_formula(vals, hosts)
        if expr is None:
            return (f"an epilogue number ({vals[0]:g} at the task's shapes, {vals[1]:g} at smaller "
                    "ones) depends on the input shape in a way the kernel cannot express (it is "
                    "not a size or element count of an input, or a simple function of one)")
        for j, nm in enumerate(names):
            expr = expr.replace(f"{{p{j}}}", nm)
        steps[i] = replace(st, host=expr)
    return replace(form, steps=tuple(steps))


def _epilogue(steps, names: list[str], T: str, first: bool = False, eager: bool = True) -> str:
    """The vector-stage expression of v (the fp32 product) for the epilogue ``steps``, rounded
    to ``T`` where eager rounds (``first``: v itself; each step marked ``rounded`` but the
    last, which the store's cast rounds) unless ``eager`` is False (the bare formula)."""
    def rnd(e: str, on: bool) -> str:
        return f"cast(cast({e}, {T}), f32)" if eager and on and T != "f32" else e

    v = rnd("v", first)
    for i, st in enumerate(steps):
        if st.op in UNARY:
            v = ACTS[st.op].format(x=v)
        else:
            if st.index is None:
                other = st.host or repr(float(st.value))
            elif st.kind == "scalar":  # a Python number passed to forward: a Scalar[f32] parameter
                other = names[st.index]
            else:
                other = f"{'load_bcast' if st.kind == 'row' else 'load'}({names[st.index]}, cc)"
                other = other if T == "f32" else f"cast({other}, f32)"
            v = f"({other} {st.op} {v})" if st.swap else f"({v} {st.op} {other})"
        v = rnd(v, st.rounded and i < len(steps) - 1)
    return v


# ---------------------------------------------------------------- mHC


def _mhc_pre(task: Task, p: dict) -> list[Candidate]:
    T = DTYPE_DSL[task.dtype]
    n = int(p["n"])
    g = n * n + 2 * n
    lines = []
    for i in range(n):
        term = f"pre[{i}] * cast(load(x, c, {i}), f32)"
        lines.append(f"            s{i} = {term}" if i == 0 else f"            s{i} = s{i - 1} + {term}")
    src = _template("cube_mhc_pre").format(
        T=T, n=n, n2=2 * n, G=g, eps=repr(float(p["eps"])), alpha_pre=repr(float(p["alpha_pre"])),
        alpha_post=repr(float(p["alpha_post"])), alpha_res=repr(float(p["alpha_res"])), iters=int(p["iters"]),
        cores=CORES, cores_default=24, weighted_sum="\n".join(lines), last=n - 1)
    return [Candidate(f"{task.name}/cube_vec", src, origin=CubeProposer.name)]


def _mhc_post(task: Task, p: dict) -> list[Candidate]:
    n = int(p.get("n", task.inputs[0].shape[1]))
    T = DTYPE_DSL[task.dtype]
    loads = "\n".join(f"            x{j} = cast(load(x, c, {j}), f32)" for j in range(n))
    mix = []
    for i in range(n):
        expr = f"hp[{i}] * yv" + "".join(f" + hr[{i * n + j}] * x{j}" for j in range(n))
        mix.append(f"            store(out, c, cast({expr}, {T}), {i})")
    src = _template("cube_mhc_post").format(T=T, n=n, n2=n * n, loads=loads, mix="\n".join(mix))
    return [Candidate(f"{task.name}/vec", src, origin=CubeProposer.name)]


def _plan(task: Task) -> tuple[str, dict, MatmulSpec | None]:
    """(kind, parameters, spec) of the cube kernel for ``task``; :class:`Declined` if none."""
    if task.dtype not in DTYPE_DSL:
        raise Declined(f"dtype {task.dtype} has no cube DSL type")
    try:
        ag = trace_task(task)
    except Unsupported as e:
        raise Declined(" ".join(str(e).split())) from None
    if not {ag.op(n) for n in ag.op_nodes()} & MATMUL_OPS:
        raise Declined("the reference has no matrix product")
    try:
        m: Match | None = first_match(task, cube_task_names(), "cube recipe")
        missed = ""
    except Declined as e:
        m, missed = None, e.reason
    if m is not None:
        kind = cube_kind(m.op) or "matmul"
        spec = registry_spec(task, m.op, m.params) if kind == "matmul" else None
        if kind != "matmul" or spec is not None:
            return kind, m.params, spec
        missed = f"the template of {m.op} does not take dtype {task.dtype}"
    spec = traced_spec(task)
    if isinstance(spec, MatmulSpec):
        return "matmul", {}, spec
    raise Declined(f"{missed}; nor is it one matrix product of two inputs with an elementwise "
                   f"epilogue ({spec})")


class CubeProposer:
    """Cube-path candidates: the registry's matmul family and mHC kernels (by meaning), and
    task files with one matrix product plus an elementwise epilogue."""

    name = "cube"

    def propose(self, task: Task) -> list[Candidate]:
        kind, params, spec = _plan(task)
        if kind == "mhc_pre":
            return _mhc_pre(task, params)
        if kind == "mhc_post":
            return _mhc_post(task, params)
        assert spec is not None
        return matmul_candidates(task.name, spec, spec_dims(task, spec))


def _kernel_name(name: str) -> str:
    """A task name usable as the kernel's name (task files may be called ``19_ReLU``)."""
    return dsl_name(name, set(), RESERVED, public=False, prefix="k")


#: names in the matmul templates (and the epilogue's own) that an input name must avoid
_TEMPLATE_NAMES = frozenset(
    words_of(_template("cube_matmul") + _template("cube_matmul_epilogue") + _template("cube_matmul_rounded")
             + _template("cube_matmul_splitk_ordered"))
    | (words_of(_template("cube_matmul_bias")) - {"bias"})  # bias= is a keyword there, not a name
    | {"c", "v", "cc"})


def _input_names(specs: list) -> list[str]:
    """DSL parameter names for the task's inputs (task files name them freely)."""
    taken: set[str] = set()
    return [dsl_name(s.name, taken, RESERVED | _TEMPLATE_NAMES) for s in specs]


def handles(task: Task) -> bool:
    """Does the cube proposer have candidates for this task?"""
    try:
        _plan(task)
    except Declined:
        return False
    return True


def propose_cube(task: Task) -> list[Candidate]:
    """Cube-path candidates for a task (raises :class:`Declined` if it is not the cube's)."""
    return CubeProposer().propose(task)
