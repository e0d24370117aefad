"""Blocked steps of a slabs loop (``slabs(x, dim=a, tile=T, rows=R)``): each step copies R rows
of the reduced axis at once (one strided GM -> UB copy) into R partial rows of every
accumulator, and the partial rows are folded into one after the steps loop. That regrouping is
only sound for folds, so this module decides which accumulator updates a blocked steps loop may
hold and with which op each is folded; :mod:`.compute` emits the copies and the folds."""

from __future__ import annotations

from .. import ir
from ..errors import DslError

FOLD_OP = {"add": "ACX_ADD", "mul": "ACX_MUL", "max": "ACX_MAX", "min": "ACX_MIN"}


def blocked(loop: ir.Loop | None) -> bool:
    """A slabs loop whose steps loops copy ``rows`` steps of K at a time (one strided copy)."""
    return loop is not None and loop.kind == "slabs" and loop.step_rows is not None


def blocked_slab_tile(unit: int, block_max: bool = False, hold: bool = False) -> list[str]:
    """The tile of a blocked slabs loop: ``bcnt`` elements of B, each accumulator ``stepRows``
    rows of them (UB row stride ``cntp``), so a step's ``kb`` rows are one vector op each
    (``block_max``: one row, see step_blockmax). ``hold``: the stride is the whole tile's even
    in a short last tile, so a block built once per core (``load_step``) fits every tile."""
    return ["    const int64_t bcnt = acx_min(td_.tileLen, td_.B - b0);  // elements of B in this tile",
            "    const int64_t cntp = td_.tileLen;  // UB row stride, the same for every tile" if hold else
            f"    const int64_t cntp = acx_align_up(bcnt, {unit});  // UB row stride",
            "    const int64_t cnt = cntp;  // block_max: the accumulators are one row" if block_max else
            "    const int64_t cnt = td_.stepRows * cntp;"]


def _reads(e: ir.Expr) -> set[str]:
    return {x.name for x in ir.walk_exprs(e) if isinstance(x, ir.Var)}


def _is_var(e: ir.Expr, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name


def _fold_of(e: ir.Expr, acc: str) -> str | None:
    """The op of ``e`` as a fold of ``acc`` (``acc op x`` / ``x op acc``, x free of acc), else None."""
    if not (isinstance(e, ir.Binary) and e.op in FOLD_OP):
        return None
    sides = [x for x in (e.lhs, e.rhs) if not _is_var(x, acc)]
    if len(sides) != 1 or any(_is_var(x, acc) for x in ir.walk_exprs(sides[0])):
        return None
    return e.op


def _rescaled_sum(e: ir.Expr, acc: str, temps: dict[str, ir.Expr]) -> tuple[str, str] | None:
    """``acc * exp(m - mn) + x`` with ``mn = maximum(m, ...)`` a temporary of the loop (the online
    log-sum-exp's rescaled sum): the names (m, mn), else None."""
    if not (isinstance(e, ir.Binary) and e.op == "add"):
        return None
    for prod, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if not (isinstance(prod, ir.Binary) and prod.op == "mul") or \
                any(_is_var(v, acc) for v in ir.walk_exprs(x)):
            continue
        for a, ex in ((prod.lhs, prod.rhs), (prod.rhs, prod.lhs)):
            if _is_var(a, acc) and isinstance(ex, ir.Unary) and ex.op == "exp" and \
                    isinstance(ex.arg, ir.Binary) and ex.arg.op == "sub" and \
                    isinstance(ex.arg.lhs, ir.Var) and isinstance(ex.arg.rhs, ir.Var):
                m, mn = ex.arg.lhs.name, ex.arg.rhs.name
                if mn in temps and _fold_of(temps[mn], m) == "max":
                    return m, mn
    return None


def _arg_update(e: ir.Expr, acc: str) -> tuple[str, str] | None:
    """``where(x > m, position(k), acc)`` (``x < m``: an argmin), ``m`` an accumulator, x free of
    acc: the step where the running extreme last grew, so the first index of the extreme when
    ``m`` is updated after it. (m, "argmax" | "argmin"), else None."""
    if not (isinstance(e, ir.Select) and _is_var(e.if_false, acc) and isinstance(e.if_true, ir.Position)):
        return None
    c = e.cond
    if c.op not in ("gt", "lt"):
        return None
    if isinstance(c.rhs, ir.Var) and not isinstance(c.lhs, ir.Var):
        m, x, op = c.rhs.name, c.lhs, c.op
    elif isinstance(c.lhs, ir.Var) and not isinstance(c.rhs, ir.Var):
        m, x, op = c.lhs.name, c.rhs, {"gt": "lt", "lt": "gt"}[c.op]
    elif isinstance(c.lhs, ir.Var) and isinstance(c.rhs, ir.Var):
        m, x, op = c.rhs.name, c.lhs, c.op  # x a named temporary of the step
    else:
        return None
    if m == acc or acc in _reads(x):
        return None
    return m, "argmax" if op == "gt" else "argmin"


def step_folds(s: ir.InnerLoop, def_id: dict[int, int], carried: dict[int, int]) -> list[tuple[int, str, str]]:
    """The accumulators a blocked steps loop updates, as (def, fold op, the max accumulator a
    rescaled sum is relative to): every row of an accumulator holds the fold of its own steps,
    so the loop must be plain folds (``acc = acc + e``, ``acc * e``, ``maximum(acc, e)``,
    ``minimum(acc, e)``, e free of acc, or ``m = mn`` with ``mn = maximum(m, e)``), the online
    log-sum-exp's rescaled sum (``s = s * exp(m - mn) + e``), the index of a running extreme
    (``i = where(e > m, position(k), i)``: folded as the smallest index among the rows that hold
    the folded extreme), temporaries and stores at the
    step (``kb`` rows out in one copy); anything else would change the meaning and is an error."""
    out, temps, ops, extremes = [], {}, {}, []
    accs = {st.target for st in s.body if isinstance(st, ir.Assign) and def_id.get(id(st)) in carried}
    partial = set(accs)  # names whose rows hold partial folds inside the loop
    for st in s.body:
        if isinstance(st, ir.Store) and st.at == s.var:  # an elementwise result, kb rows a copy
            if _reads(st.value) & partial:
                raise DslError("slabs(rows=...): a store per step cannot read an accumulator of its "
                               "own steps loop (inside the loop its rows hold partial folds)", st.loc)
            continue
        if isinstance(st, (ir.Store, ir.InnerLoop)):
            raise DslError("slabs(rows=...) steps loops fold accumulators and store per step", st.loc)
        if not isinstance(st, ir.Assign):
            continue
        if def_id.get(id(st)) not in carried:
            temps[st.target] = st.value
            if _reads(st.value) & partial:
                partial.add(st.target)
            continue
        v, op, rel = st.value, _fold_of(st.value, st.target), ""
        others = partial - {st.target}
        if op is not None and _reads(v) & others:
            op = None
        if op is None and isinstance(v, ir.Var) and v.name in temps:
            op = _fold_of(temps[v.name], st.target)
            if op is not None and _reads(temps[v.name]) & (others - {v.name}):
                op = None
        if op is None and (pair := _rescaled_sum(v, st.target, temps)):
            m, mn = pair
            if not _reads(v) & (others - {m, mn}) and not _reads(temps[mn]) & (others - {m, mn}):
                op, rel = "add", m
        if op is None and (arg := _arg_update(v, st.target)) and arg[0] in accs and \
                not _reads(v) & (others - {arg[0]}):
            rel, op = arg
            extremes.append((st.loc, st.target, rel, op[3:]))
        if op is None:
            raise DslError(f"slabs(rows=...): '{st.target}' must be a fold (acc = acc + e, acc * e, "
                           "maximum(acc, e) or minimum(acc, e), e free of the loop's accumulators) "
                           "to be split over rows", st.loc)
        out.append((def_id[id(st)], op, rel))
        ops[st.target] = op
    for loc, i, m, red in extremes:  # an index's extreme: a max (argmax) / min (argmin) fold
        if ops.get(m) != red:
            raise DslError(f"slabs(rows=...): '{i}' follows where '{m}' grows, so '{m}' must be "
                           f"a {red} fold of the same steps loop", loc)
    return out
