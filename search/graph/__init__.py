"""The graph frontend of the builtin proposer: reference -> ATen graph -> DSL candidates.

1. the shared ATen tracer (:mod:`ascendcraft.tasks.aten`, read through :mod:`.trace`) runs
   the task's reference on meta tensors and holds the ATen ops in a ``networkx`` graph (no
   allocation, any task size);
2. :mod:`.decompose` rewrites each ATen op into DSL-level primitives (:mod:`.prims`) by the
   rule tables of ``rules_*.py``, folding constants and sharing common subexpressions;
3. :mod:`.patterns` recognises the loop the graph needs (elementwise tiles, last-dim
   rows, middle-axis slabs) and the broadcast form of every value, at the task's shapes
   and at the evaluator's reduced shapes;
4. :mod:`.emit` composes one DSL program per sensible structure, with names the DSL accepts
   (:mod:`.names`).

:class:`GraphProposer` is the entry point in a proposer chain: anything it cannot do
ends as ``search.proposer.Declined`` naming the ATen op (or the broadcast / reduction) and
why; :func:`propose_from_graph` is the same as one call raising ``ProposerError``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...tasks.shapes import reduced_shapes
from ...tasks.task import Shape, Task, TaskError
from ..flat import block_max_slabs
from ..hold import hold_first_pass, wide_rows
from ..proposer import Candidate, Declined, ProposerError
from ..split_k import split_slabs
from .decompose import decompose
from .emit import Emitter, structures
from .patterns import Plan, analyse
from .trace import Unsupported, trace_task


def shape_sets(task: Task) -> list[list[Shape]]:
    """The shape sets the frontend analyses a task at: its full shapes, then its reduced ones."""
    sets = [list(task.shapes)]
    try:
        for ss in reduced_shapes(task):
            if [tuple(s) for s in ss] not in [[tuple(s) for s in x] for x in sets]:
                sets.append([tuple(s) for s in ss])
    except TaskError:
        pass
    return sets


def build_plan(task: Task, sets: list[list[Shape]] | None = None, kinds: Sequence[str] | None = None) -> Plan:
    """Trace, decompose and analyse ``task`` at its full and reduced shapes, or at
    ``sets`` (the full set first) when the caller derives them, with loops of ``kinds`` only
    when given (raises :class:`Unsupported`)."""
    if not task.meta_ok:
        raise Unsupported("the reference does not run on meta tensors (e.g. .item() or "
                          "data-dependent shapes), so its ATen graph cannot be traced")
    sets = sets or shape_sets(task)
    pgs = []
    out_dtypes = None
    aten_ops: list[str] = []
    for shapes in sets:
        ag = trace_task(task, shapes)
        pgs.append(decompose(ag, task.inputs))
        if out_dtypes is None:
            out_dtypes = [ag.meta(r)[1] for r in ag.outputs]
            for n in ag.op_nodes():
                target = ag.node(n)["target"]
                name = str(target).removeprefix("aten.")
                if not target.is_view and name not in aten_ops:
                    aten_ops.append(name)
    assert out_dtypes is not None
    plan = analyse(task, pgs, sets, out_dtypes, kinds)
    for p in (plan, *plan.alternatives):
        p.aten_ops = tuple(aten_ops)
    return plan


class GraphProposer:
    """Builds kernels from the task's traced ATen graph: any reference whose ops, reductions
    and broadcasts the frontend can express, whatever the task is called."""

    name = "graph"

    def propose(self, task: Task, sets: list[list[Shape]] | None = None,
                kinds: Sequence[str] | None = None) -> list[Candidate]:
        """Candidates for ``task`` (analysed at ``sets`` and with loops of ``kinds`` when given,
        see :func:`build_plan`)."""
        try:
            first = build_plan(task, sets, kinds)
            out, why = [], None
            for plan, s in [(p, s) for p in [first, *first.alternatives] for s in structures(p)]:
                try:  # a structure that cannot hold the plan is left out
                    em = Emitter(plan, task, s)
                    prog = em.program()
                except Unsupported as e:
                    why = why or e
                    continue
                name = f"{task.name}/graph-{s}"
                if any(c.name == name for c in out):  # the same structure of a further plan
                    name = f"{name}_{plan.domain.kind}{plan.domain.dim}"
                    name += f"g{plan.domain.groups}" if plan.domain.regrouped else ""
                out.append(Candidate(name, prog, origin=self.name))
                if s in ("slabs_flat", "slabs_flat-online") and (split := _split_k(prog, plan)):
                    out.append(Candidate(f"{task.name}/graph-{s}_split", split, origin=self.name))
                if s in ("slabs_rows", "slabs_rows-online") and (split := _split_tiles(prog, plan, em)):
                    out.append(Candidate(f"{task.name}/graph-{s}_split", split, origin=self.name))
                if s in ("chunked", "chunked-online") and (held := _held(prog, plan)):
                    out.append(Candidate(f"{name}_hold", held, origin=self.name))
                if s == "slabs_flat-online" and em.online_plain and (bm := _block_max(prog, plan)):
                    out += [Candidate(f"{task.name}/graph-{n}", p, origin=self.name) for n, p in bm]
            if not out and why is not None:
                raise why
            return out
        except Unsupported as e:
            raise Declined(f"cannot build a kernel: {' '.join(str(e).split()).rstrip('.')}") from None
        except Exception as e:  # noqa: BLE001 - a frontend bug must not crash `check`
            text = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            raise Declined(f"failed internally ({text}); please report it with the task "
                           "file") from None


def _one_fold_pass(prog: str) -> bool:
    """Is a slabs program one steps loop of folds, what ``slabs(split=...)`` admits (no total_*,
    no step position)?"""
    return prog.count(" in steps(") == 1 and "total_" not in prog and "position(" not in prog


def _split_k(prog: str, plan) -> str | None:
    """The flat slabs program with K split across cores (search/split_k.py) when it is one
    pass of folds (one steps loop, no total_*: what slabs(split=...) admits), else None."""
    if not _one_fold_pass(prog):
        return None
    try:
        return split_slabs(prog, plan.domain.extents(plan.full_shape)["A"])
    except ValueError:
        return None


#: slabs(rows=...) programs of fewer tiles than this (at the default TILE) are offered K-split too
SPLIT_TILES_BELOW = 24
#: ... when K has at least this many steps (a slice of a short K is a few copies: no gain)
SPLIT_MIN_STEPS = 512


def _split_tiles(prog: str, plan, em: Emitter) -> str | None:
    """The blocked slabs program with K split across cores when its tiles leave most cores idle
    and K is long (a vector times a [4096, 1024] matrix: one slab of 8 tiles on 8 cores), and it
    is one pass of folds (as :func:`_split_k`), else None."""
    e = plan.domain.extents(plan.full_shape)
    tiles = em.blocked_items()
    if tiles >= SPLIT_TILES_BELOW or e["K"] < SPLIT_MIN_STEPS:
        return None
    if not _one_fold_pass(prog):
        return None
    try:
        return split_slabs(prog, tiles)
    except ValueError:
        return None


def _held(prog: str, plan) -> str | None:
    """The chunked program with its first pass keeping what UB holds of each row tile for the
    later passes (search/hold.py) when its rows are too wide for UB and it makes two passes or
    more over them, with no column operand (a weight chunk a tile would come one row a tile), else None."""
    if plan.domain.kind != "rows" or plan.domain.groups != 1 or any(f == "c" for f in plan.forms.values()):
        return None
    width = plan.domain.extents(plan.full_shape)["W"]
    if prog.count(" in chunks(t, CHUNK)") < 2 or not wide_rows(width):
        return None
    try:
        return hold_first_pass(prog, width)
    except ValueError:
        return None


def _block_max(prog: str, plan) -> list[tuple[str, str]]:
    """The online flat slabs program with one max a block of steps (search/flat.py), alone
    and K-split (the caller checks its steps loop is the plain online form block_max takes:
    at fp16 the rounded x - max is not ``exp(a - mn)``); one steps loop only (a softmax's
    output pass is no online step)."""
    if prog.count(" in steps(") != 1:
        return []
    try:
        bm = block_max_slabs(prog.replace("ROWS = tunable(pow2(1, 256), default=4)",
                                          "ROWS = tunable(pow2(1, 256), default=8)", 1))
    except ValueError:
        return []
    out = [("slabs_flat-blockmax", bm)]
    if (split := _split_k(bm, plan)) is not None:
        out.append(("slabs_flat-blockmax_split", split))
    return out


def propose_from_graph(task: Task) -> list[Candidate]:
    """DSL candidates for ``task`` composed from its traced ATen graph, best guess first."""
    try:
        return GraphProposer().propose(task)
    except Declined as e:
        raise ProposerError(f"task {task.name!r}: the graph frontend {e.reason}.") from None


__all__ = ["GraphProposer", "Unsupported", "build_plan", "propose_from_graph", "shape_sets", "trace_task"]
