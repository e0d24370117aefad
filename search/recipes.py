"""Vector recipes: expert DSL kernels for the registry's ops, served by meaning.

A template is DSL text for one *structure* (``tiles_map``, ``rows_whole``, ``rows_chunked``,
``slabs_steps``, ...) with the op-specific body filled in by plain string formatting; the
result is parsed like any other candidate. The recipes below are the expert part: which
structure suits an op, and the body written in the DSL. Where two structures are sensible
(whole rows per tile vs column-chunked rows, one-pass vs two-pass) both are proposed, as
separate candidates.

:class:`RecipeProposer` serves a task only when :mod:`.recipe_match` finds that the task's
reference *is* a registry op's computation (the task's name plays no part) and the recipe's
own limits (which dim it reduces, which rank it scans) hold; the recipe then reads the op's
parameters as the match extracted them from the task's graph, and the inputs under the
registry's names (the kernel binds them by position).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import torch

from ..tasks.task import Task
from .core_counts import balanced_cores, even_cores, with_cores_default
from .flat import block_max_slabs, flat_rows, flat_slabs
from .hold import hold_first_pass, wide_rows
from .onepass import online_logsumexp, shifted_moments
from .proposer import Candidate, Declined, ProposerError
from .recipe_match import Match, first_match
from .split_k import split_slabs

DTYPE_DSL = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int32: "i32"}


def _template(name: str) -> str:
    return resources.files("ascendcraft.search").joinpath("templates", f"{name}.dsl").read_text()


def _indent(lines, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + ln if ln else "" for ln in lines)


@dataclass
class _Ctx:
    """What a recipe reads: ``task`` is the matched registry op on the task's inputs (its
    name is the op's, its inputs carry the registry's names), ``p`` the op's parameters as
    read from the task, ``label`` the task's own name (for candidate names)."""

    task: Task
    T: str
    p: dict
    label: str = ""

    def cand(self, kind: str, source: str) -> Candidate:
        """A candidate named after the task (and the op, when the names differ)."""
        op = self.task.name
        label = self.label or op
        return Candidate(f"{label}/{kind}" if label == op else f"{label}/{op}-{kind}", source,
                         origin=RecipeProposer.name)

    @property
    def tensors(self) -> list[str]:
        return [s.name for s in self.task.inputs if s.is_tensor]

    @property
    def scalars(self) -> list[str]:
        return [s.name for s in self.task.inputs if not s.is_tensor]

    def param(self, key: str, default: float | None = None) -> str:
        v = self.p.get(key, default)
        if v is None:
            raise ProposerError(f"task {self.task.name!r} has no parameter {key!r}")
        return repr(float(v))

    def signature(self, outs=("out",), dtypes: dict[str, str] | None = None) -> str:
        dtypes = dtypes or {}
        parts = [f"{n}: In[{dtypes.get(n, self.T)}]" for n in self.tensors]
        parts += [f"{n}: Scalar[f32]" for n in self.scalars]
        parts += [f"{o}: Out[{self.T}]" for o in outs]
        return ", ".join(parts)


def _render(c: _Ctx, template: str, body: list[str], *, prelude=(), epilogue=(), outs=("out",),
            doc: str = "", first: str | None = None, dtypes=None, **extra) -> str:
    # default tile: every tensor has a double-buffered queue in UB, so ops with many operands
    # (optimizers) start at a smaller tile that fits (the tuner explores the rest)
    tile = 4096 if len(c.tensors) + len(outs) <= 3 else 2048
    fields = dict(category=c.task.category, name=c.task.name, params=c.signature(outs, dtypes),
                  doc=doc, first=first or c.tensors[0], tile=tile, rowargs="", dim=1)
    fields.update(extra)
    fields["prelude"] = _indent(prelude, 4) + ("\n" if prelude else "")
    fields["body"] = _indent(body, 8)
    fields["epilogue"] = _indent(epilogue, 4)
    return _template(template).format(**fields).rstrip() + "\n"


def _loads(c: _Ctx, at: str = "t", names: dict[str, str] | None = None) -> list[str]:
    """Load every tensor input into an f32 value named after the input (or ``names``)."""
    names = names or {}
    return [f"{names.get(n, n + '_')} = cast(load({n}, {at}), f32)" for n in c.tensors]


# ---------------------------------------------------------------- elementwise maps
# expressions over the loaded inputs (input name + "_") and the op's parameters
ACTIVATIONS: dict[str, str] = {
    "relu": "relu(x_)",
    "relu6": "minimum(maximum(x_, 0.0), 6.0)",
    "leaky_relu": "leaky_relu(x_, {negative_slope})",
    "elu": "where(x_ > 0.0, x_, {alpha} * (exp(x_) - 1.0))",
    "selu": "1.0507009873554805 * where(x_ > 0.0, x_, 1.6732632423543772 * (exp(x_) - 1.0))",
    "celu": "maximum(x_, 0.0) + minimum({alpha} * (exp(x_ / {alpha}) - 1.0), 0.0)",
    "gelu": "0.5 * x_ * (1.0 + erf(x_ * 0.7071067811865476))",
    "gelu_tanh": "0.5 * x_ * (1.0 + tanh(0.7978845608028654 * (x_ + 0.044715 * x_ * x_ * x_)))",
    "sigmoid": "sigmoid(x_)",
    "logsigmoid": "minimum(x_, 0.0) - log(1.0 + exp(-abs(x_)))",
    "hardsigmoid": "minimum(maximum(x_ / 6.0 + 0.5, 0.0), 1.0)",
    "hardswish": "x_ * minimum(maximum(x_ + 3.0, 0.0), 6.0) / 6.0",
    "hardtanh": "minimum(maximum(x_, {min_val}), {max_val})",
    "softplus": "where(x_ * {beta} > {threshold}, x_, log(1.0 + exp(x_ * {beta})) / {beta})",
    "softsign": "x_ / (1.0 + abs(x_))",
    "swish": "x_ * sigmoid(x_)",
    "silu": "x_ * sigmoid(x_)",
    "tanh": "tanh(x_)",
    "mish": "x_ * tanh(log(1.0 + exp(x_)))",
}
BINARY = {"add": "x_ + y_", "sub": "x_ - y_", "mul": "x_ * y_", "div": "x_ / y_",
          "maximum": "maximum(x_, y_)"}
SCALED = {"mul_scalar": "x_ * s", "matrix_scalar_multiplication": "a_ * s"}
OPTIMIZERS: dict[str, tuple[list[str], list[str]]] = {
    # name -> (host-side scalar prelude, body ending in the new parameter `np`)
    "sgd_momentum": ([], [
        "gg = grad_ + {weight_decay} * param_",
        "np = param_ - {lr} * ({momentum} * momentum_buffer_ + gg)"]),
    "adagrad": ([], ["np = param_ - {lr} * grad_ / (sqrt(state_sum_ + grad_ * grad_) + {eps})"]),
    "rmsprop": ([], [
        "v = {alpha} * square_avg_ + (1.0 - {alpha}) * grad_ * grad_",
        "np = param_ - {lr} * grad_ / (sqrt(v) + {eps})"]),
    "adam": (["bc1 = 1.0 - {beta1} ** step", "bc2 = 1.0 - {beta2} ** step"], [
        "m = {beta1} * exp_avg_ + (1.0 - {beta1}) * grad_",
        "v = {beta2} * exp_avg_sq_ + (1.0 - {beta2}) * grad_ * grad_",
        "np = param_ - {lr} * (m / bc1) / (sqrt(v / bc2) + {eps})"]),
    "adamw": (["bc1 = 1.0 - {beta1} ** step", "bc2 = 1.0 - {beta2} ** step"], [
        "m = {beta1} * exp_avg_ + (1.0 - {beta1}) * grad_",
        "v = {beta2} * exp_avg_sq_ + (1.0 - {beta2}) * grad_ * grad_",
        "np = param_ * (1.0 - {lr} * {weight_decay}) - {lr} * (m / bc1) / (sqrt(v / bc2) + {eps})"]),
}


def _fmt(c: _Ctx, text: str) -> str:
    return text.format(**{k: repr(float(v)) for k, v in c.p.items() if isinstance(v, (int, float))})


def _map_candidates(c: _Ctx, expr_lines: list[str], prelude=(), doc="") -> list[Candidate]:
    *pre, last = [_fmt(c, x) for x in expr_lines]
    last = last.removeprefix("np = ")
    body = _loads(c) + pre + [f"store(out, t, cast({last}, {c.T}))"]
    src = _render(c, "tiles_map", body, prelude=[_fmt(c, x) for x in prelude], doc=doc)
    return [c.cand("tiles", src)]


# ---------------------------------------------------------------- losses (scalar outputs)
POINTWISE_LOSSES = {
    "mse_loss": "(predictions_ - targets_) * (predictions_ - targets_)",
    "l1_loss": "abs(predictions_ - targets_)",
    "huber_loss": "where(d < {delta}, 0.5 * d * d, {delta} * (d - 0.5 * {delta}))",
    "smooth_l1_loss": "where(d < {beta}, 0.5 * d * d / {beta}, d - 0.5 * {beta})",
    "hinge_loss": "maximum(1.0 - predictions_ * targets_, 0.0)",
}


def _pointwise_loss(c: _Ctx) -> list[Candidate]:
    term = _fmt(c, POINTWISE_LOSSES[c.task.name])
    body = _loads(c)
    if "d <" in term:
        body.append("d = abs(predictions_ - targets_)")
    body.append(f"s = total_sum({term})")
    src = _render(c, "tiles_map", body, epilogue=[f"store(out, s / numel({c.tensors[0]}))"],
                  doc=f"{c.task.name}: mean of a pointwise term; per-core partial sums combined "
                      "across cores (total_sum), one scalar stored.")
    return [c.cand("tiles", src)]


def _row_loss(c: _Ctx, rows_body: list[str], chunk_passes: list[list[str]] | None, term: str,
              denom: str) -> list[Candidate]:
    """Per-row losses reduced to a mean: whole rows, and (if given) column-chunked passes."""
    out = []
    epi = [f"store(out, s / {denom})"]
    body = rows_body + [f"s = total_sum({term})"]
    out.append(c.cand("rows", _render(
        c, "rows_whole", body, epilogue=epi, doc=f"{c.task.name}: per-row terms, mean over rows.")))
    if chunk_passes is not None:
        lines: list[str] = []
        for part in chunk_passes:
            lines += part
        lines.append(f"s = total_sum({term})")
        out.append(c.cand("chunked", _render(
            c, "rows_chunked", lines, epilogue=epi, doc=f"{c.task.name}: per-row terms, mean over rows.")))
    return out


def _acc_chunks(acc_inits: list[str], updates: list[str]) -> list[str]:
    return acc_inits + ["for c in chunks(t, CHUNK):"] + ["    " + u for u in updates]


def _losses_rows(c: _Ctx) -> list[Candidate]:
    n = c.task.name
    if n == "kl_div":
        term_tile = "targets_ * (log(targets_) - log_predictions_)"
        whole = _loads(c) + [f"r = row_sum({term_tile})"]
        chunked = [_acc_chunks(["r = row_fill(0.0)"], [
            "tg = cast(load(targets, c), f32)",
            "r = r + row_sum(tg * (log(tg) - cast(load(log_predictions, c), f32)))"])]
        return _row_loss(c, whole, chunked, "r", f"size({c.tensors[0]}, 0)")
    if n == "cosine_similarity_loss":
        whole = _loads(c) + ["dot = row_sum(predictions_ * targets_)",
                             "nn = row_sum(predictions_ * predictions_) * row_sum(targets_ * targets_)",
                             "r = 1.0 - dot / sqrt(maximum(nn, 1e-16))"]
        chunked = [_acc_chunks(["dot = row_fill(0.0)", "na = row_fill(0.0)", "nb = row_fill(0.0)"], [
            "a = cast(load(predictions, c), f32)", "b = cast(load(targets, c), f32)",
            "dot = dot + row_sum(a * b)", "na = na + row_sum(a * a)", "nb = nb + row_sum(b * b)"]),
            ["r = 1.0 - dot / sqrt(maximum(na * nb, 1e-16))"]]
        return _row_loss(c, whole, chunked, "r", f"size({c.tensors[0]}, 0)")
    if n == "triplet_margin_loss":
        m = c.param("margin", 1.0)
        whole = _loads(c) + ["dp = anchor_ - positive_ + 1e-6", "dn = anchor_ - negative_ + 1e-6",
                             f"r = maximum(sqrt(row_sum(dp * dp)) - sqrt(row_sum(dn * dn)) + {m}, 0.0)"]
        chunked = [_acc_chunks(["sp = row_fill(0.0)", "sn = row_fill(0.0)"], [
            "a = cast(load(anchor, c), f32)",
            "dp = a - cast(load(positive, c), f32) + 1e-6",
            "dn = a - cast(load(negative, c), f32) + 1e-6",
            "sp = sp + row_sum(dp * dp)", "sn = sn + row_sum(dn * dn)"]),
            [f"r = maximum(sqrt(sp) - sqrt(sn) + {m}, 0.0)"]]
        return _row_loss(c, whole, chunked, "r", f"size({c.tensors[0]}, 0)")
    if n == "cross_entropy":
        dt = {"targets": "i64"}
        # the target logit is picked (scalar GM reads behind a V->S sync) right after the tile's
        # load is issued and before its vector work: the sync then waits for the previous tile's
        # vector ops while this tile's copy is in flight, instead of stalling the next tile's load
        pick = "p = cast(pick(logits, t, targets), f32)"
        whole = ["a = cast(load(logits, t), f32)", pick, "m = row_max(a)",
                 "lse = log(row_sum(exp(a - m))) + m", "r = lse - p"]
        chunked = [[pick], _acc_chunks(["m = row_fill(-inf)"], ["m = maximum(m, row_max(cast(load(logits, c), f32)))"]),
                   _acc_chunks(["se = row_fill(0.0)"], ["se = se + row_sum(exp(cast(load(logits, c), f32) - m))"]),
                   ["r = log(se) + m - p"]]
        out = []
        for kind, tpl, body in (("rows", "rows_whole", whole), ("chunked", "rows_chunked", chunked)):
            lines = body if kind == "rows" else [x for part in body for x in part]
            src = _render(c, tpl, lines + ["s = total_sum(r)"], epilogue=["store(out, s / numel(targets))"],
                          dtypes=dt, doc="cross entropy: per-row logsumexp minus the target logit, "
                          "mean over rows.")
            out.append(c.cand(kind, src))
        return out
    raise ProposerError(f"no row-loss recipe for {n}")


# ---------------------------------------------------------------- row-wise (last dims)
def _rowwise(c: _Ctx) -> list[Candidate]:
    """Normalisations and reductions over the trailing dims: whole rows and chunked rows."""
    n, T = c.task.name, c.T
    eps = c.param("eps", 1e-5) if "eps" in c.p else "1e-5"
    dims = {"layer_norm_2d": 2, "instance_norm": 2}.get(n, 1)
    if n in ("instance_norm",):
        dims = max(1, len(c.task.inputs[0].shape) - 2)
    rowargs = f", dims={dims}" if dims != 1 else ""
    if n == "group_norm":
        rank = len(c.task.inputs[0].shape)
        rowargs = f", dims={rank - 1}, groups={int(c.p['num_groups'])}"
    out_t = f"cast({{}}, {T})"
    W = "width(t)"
    whole: dict[str, list[str]] = {
        "softmax": ["a = cast(load(x, t), f32)", "e = exp(a - row_max(a))",
                    f"store(out, t, {out_t.format('e / row_sum(e)')})"],
        "log_softmax": ["a = cast(load(x, t), f32)", "d = a - row_max(a)",
                        f"store(out, t, {out_t.format('d - log(row_sum(exp(d)))')})"],
        "rms_norm": ["a = cast(load(x, t), f32)",
                     f"store(out, t, {out_t.format(f'a * rsqrt(row_sum(a * a) / {W} + {eps})')})"],
        "l1_norm": ["a = cast(load(x, t), f32)", f"store(out, t, {out_t.format('a / row_sum(abs(a))')})"],
        "l2_norm": ["a = cast(load(x, t), f32)", f"store(out, t, {out_t.format('a / sqrt(row_sum(a * a))')})"],
        "sum_lastdim": [f"store(out, t, {out_t.format('row_sum(cast(load(x, t), f32))')})"],
        "max_dim": [f"store(out, t, {out_t.format('row_max(cast(load(x, t), f32))')})"],
    }
    norm_whole = ["a = cast(load(x, t), f32)", f"d = a - row_sum(a) / {W}",
                  f"rstd = rsqrt(row_sum(d * d) / {W} + {eps})"]
    for k in ("instance_norm", "group_norm"):
        whole[k] = norm_whole + [f"store(out, t, {out_t.format('d * rstd')})"]
    for k in ("layer_norm", "layer_norm_2d"):
        whole[k] = norm_whole + ["g = cast(load_bcast(weight, t), f32)", "b = cast(load_bcast(bias, t), f32)",
                                 f"store(out, t, {out_t.format('d * rstd * g + b')})"]
    ld = "cast(load(x, c), f32)"
    # three-pass softmax statistics: the row max, then the sum of exponentials
    softmax_stats = (_acc_chunks(["m = row_fill(-inf)"], [f"m = maximum(m, row_max({ld}))"])
                     + _acc_chunks(["s = row_fill(0.0)"], [f"s = s + row_sum(exp({ld} - m))"]))
    sm_out = ["for c in chunks(t, CHUNK):", f"    store(out, c, {out_t.format(f'exp({ld} - m) / s')})"]
    lsm_out = ["lse = m + log(s)", "for c in chunks(t, CHUNK):",
               f"    store(out, c, {out_t.format(f'{ld} - lse')})"]
    chunked: dict[str, list[str]] = {
        "softmax": softmax_stats + sm_out,
        "log_softmax": softmax_stats + lsm_out,
        "rms_norm": _acc_chunks(["s = row_fill(0.0)"], [f"a = {ld}", "s = s + row_sum(a * a)"])
        + [f"r = rsqrt(s / {W} + {eps})", "for c in chunks(t, CHUNK):",
           f"    store(out, c, {out_t.format(f'{ld} * r')})"],
        "l1_norm": _acc_chunks(["s = row_fill(0.0)"], [f"s = s + row_sum(abs({ld}))"])
        + ["for c in chunks(t, CHUNK):", f"    store(out, c, {out_t.format(f'{ld} / s')})"],
        "l2_norm": _acc_chunks(["s = row_fill(0.0)"], [f"a = {ld}", "s = s + row_sum(a * a)"])
        + ["r = sqrt(s)", "for c in chunks(t, CHUNK):", f"    store(out, c, {out_t.format(f'{ld} / r')})"],
        "sum_lastdim": _acc_chunks(["s = row_fill(0.0)"], [f"s = s + row_sum({ld})"])
        + [f"store(out, t, {out_t.format('s')})"],
        "max_dim": _acc_chunks(["s = row_fill(-inf)"], [f"s = maximum(s, row_max({ld}))"])
        + [f"store(out, t, {out_t.format('s')})"],
    }
    norm_chunked = (_acc_chunks(["s = row_fill(0.0)"], [f"s = s + row_sum({ld})"])
                    + [f"mean = s / {W}"]
                    + _acc_chunks(["v = row_fill(0.0)"], [f"d = {ld} - mean", "v = v + row_sum(d * d)"])
                    + [f"rstd = rsqrt(v / {W} + {eps})"])
    # the output pass of a norm, after its statistics (row values mean, rstd)
    norm_out = {k: ["for c in chunks(t, CHUNK):", f"    store(out, c, {out_t.format(f'({ld} - mean) * rstd')})"]
                for k in ("instance_norm", "group_norm")}
    for k in ("layer_norm", "layer_norm_2d"):
        norm_out[k] = ["for c in chunks(t, CHUNK):", "    g = cast(load_bcast(weight, c), f32)",
                       "    b = cast(load_bcast(bias, c), f32)",
                       f"    store(out, c, {out_t.format(f'({ld} - mean) * rstd * g + b')})"]
    # one-pass statistics (see .onepass): one read of each chunk fewer than `chunked`
    onepass = {"softmax": online_logsumexp(ld) + sm_out, "log_softmax": online_logsumexp(ld) + lsm_out}
    for k, lines in norm_out.items():
        chunked[k] = norm_chunked + lines
        onepass[k] = shifted_moments(ld, W, eps) + lines
    doc = f"{n} over the trailing dim(s)."
    out = [c.cand("rows", _render(c, "rows_whole", whole[n], doc=doc, rowargs=rowargs))]
    if n in ("layer_norm", "layer_norm_2d"):
        out.append(c.cand("resident", _resident_layer_norm(c, rowargs, eps)))
        out.append(c.cand("resident_inplace", _inplace_layer_norm(c, rowargs, eps)))
    if n in onepass:
        kind = "online" if n.endswith("softmax") else "onepass"
        src = _affine_tile(n, _render(c, "rows_chunked", onepass[n], rowargs=rowargs,
                                      doc=doc + " Statistics in one pass over the chunks."))
        # streaming rows (two reads and a write a row): an even split over fewer cores when 48
        # leave over 3% of the row slots idle (group_norm's 128 group rows: 32 cores, 4 each, not
        # 3 on some of 48 and 2 on others; modeled 474.1 -> 421.6 us). Not for less: each of
        # fewer cores has more vector work (softmax's 4096 rows on 32 cores: 1729 -> 1788 us)
        rows = _norm_rows(c, dims)
        even = even_cores(rows)
        if -(-rows // 48) * 48 > 1.03 * -(-rows // even) * even:
            out.append(c.cand(kind, with_cores_default(src, even)))
        else:
            out.append(c.cand(kind, src))
        width = math.prod(int(d) for d in c.task.inputs[0].shape) // rows
        if wide_rows(width) and n != "layer_norm_2d":
            # two reads a row: keep what UB holds of the first, on all 48 cores (fewer pay for the
            # hold's smaller chunks: instance_norm 418.5 us on 48, 447.0 on 32); not beside a
            # LayerNorm's weight and bias, which then come one row a tile (layer_norm_2d 1205 us)
            out.append(c.cand(f"{kind}_hold", hold_first_pass(src, width)))
    if n == "max_dim":  # beside the per-row copies: one 512 B-aligned burst a tile (.flat_rows)
        out.append(c.cand("rows_flat", flat_rows(_render(c, "rows_whole", whole[n], doc=doc, rowargs=rowargs))))
    out.append(c.cand("chunked", _affine_tile(n, _render(c, "rows_chunked", chunked[n], doc=doc,
                                                         rowargs=rowargs))))
    if n == "sum_lastdim":  # a reduction streams its rows: an even split over the cores
        shape = [int(d) for d in c.task.inputs[0].shape]
        rows = math.prod(shape[:-1])
        out = [Candidate(x.name, with_cores_default(x.source, even_cores(rows)), origin=x.origin) for x in out]
    return out


def _affine_tile(n: str, src: str) -> str:
    """The chunked layer norms start at 8 rows of 1024-column chunks: each weight/bias chunk
    then serves 8 rows (at 1 row a tile it is re-read for every row) in a 32 KiB tile, which
    fits UB beside the output's two slots once a dying named tile is overwritten in place
    (modeled, model 2.3, default shapes, stores behind the next loads: layer_norm_2d
    893.5 us at 4 rows -> 874.2 us at 8; layer_norm's onepass 249.8 -> 238.4 us)."""
    if n not in ("layer_norm", "layer_norm_2d"):
        return src
    return (src.replace("ROWS = tunable(pow2(1, 16), default=1)", "ROWS = tunable(pow2(1, 16), default=8)")
            .replace("CHUNK = tunable(pow2(256, 16384), default=4096)", "CHUNK = tunable(pow2(256, 16384), default=1024)"))


def _resident_layer_norm(c: _Ctx, rowargs: str, eps: str) -> str:
    """Whole rows read once, weight and bias resident in UB (the lowering copies a whole-row
    ``load_bcast`` once per core), shifted statistics (see .onepass) so that one tile-sized
    temporary suffices: an 8192-wide fp32 row fits single-buffered (x, out, weight, bias and
    one temporary: 160 KiB), where the two-temporary form needs more than UB."""
    body = ["a = cast(load(x, t), f32)", "k = row_last(a)", "dm = row_sum(a - k) / width(t)",
            "var = maximum(row_sum((a - k) ** 2) / width(t) - dm * dm, 0.0)", f"rstd = rsqrt(var + {eps})",
            "mean = k + dm", "g = cast(load_bcast(weight, t), f32)", "b = cast(load_bcast(bias, t), f32)",
            f"store(out, t, cast((a - mean) * rstd * g + b, {c.T}))"]
    src = _render(c, "rows_whole", body, rowargs=rowargs, doc=f"{c.task.name}: one read of x, resident "
                  "weight and bias, shifted one-pass statistics.")
    return (src.replace("ROWS = tunable(pow2(1, 64), default=4)", "ROWS = tunable(pow2(1, 64), default=1)")
            .replace("DEPTH = tunable(choice(1, 2), default=2)", "DEPTH = tunable(choice(1, 2), default=1)"))


def _inplace_layer_norm(c: _Ctx, rowargs: str, eps: str) -> str:
    """The resident layer norm with y computed into x's slot and copied out of it (a bound
    VECIN->VECOUT queue, ``rows(inplace=True)``): no output buffer, so an 8192-wide fp32 row
    is double buffered (2 x 32 KiB slots, resident weight and bias, one temporary: 160 KiB)
    and x is read once, y written once. The row is in UB, so its statistics are exact two
    passes over it after a shift by one of its values (``s = x - k``, then ``e = s - mean(s)``
    and the centred second moment, each replacing x in its slot): the shift keeps the mean's
    fp32 sum small (an unshifted sum of a row near 1000 loses ~1e-4 of the mean, failing the
    large-mean test), the second pass needs no cancelling formula and no clamp. Six vector
    passes a row (modeled, model 2.1, 4096 x 8192 fp32, 48 cores: 209.1 us)."""
    body = ["a = cast(load(x, t), f32)", "k = row_last(a)", "s = a - k", "ms = row_sum(s) / width(t)", "e = s - ms",
            f"rstd = rsqrt(row_sum(e * e) / width(t) + {eps})",
            "g = cast(load_bcast(weight, t), f32)", "b = cast(load_bcast(bias, t), f32)",
            f"store(out, t, cast(e * rstd * g + b, {c.T}))"]
    src = _render(c, "rows_whole", body, rowargs=rowargs, doc=f"{c.task.name}: one read of x, resident "
                  "weight and bias, shifted one-pass statistics, y written into x's slot.")
    return src.replace("ROWS = tunable(pow2(1, 64), default=4)", "ROWS = tunable(pow2(1, 64), default=1)").replace(
        "depth=DEPTH", "depth=DEPTH, inplace=True", 1)


ROWWISE = ("softmax", "log_softmax", "layer_norm", "layer_norm_2d", "rms_norm", "l1_norm", "l2_norm",
           "sum_lastdim", "instance_norm", "group_norm")


# ---------------------------------------------------------------- strided (middle-dim) ops
def _middim(c: _Ctx) -> list[Candidate]:
    n, T = c.task.name, c.T
    dim = _dim(c)
    if n == "rms_norm_nchw":
        dim = 1
    ld = "cast(load(x, k), f32)"
    bodies = {
        "max_middim": (["acc = tile_fill(-inf)"], f"acc = maximum(acc, {ld})", "acc"),
        "sum_dim": (["acc = tile_fill(0.0)"], f"acc = acc + {ld}", "acc"),
        "mean_dim": (["acc = tile_fill(0.0)"], f"acc = acc + {ld}", "acc / width(t)"),
        "min_dim": (["acc = tile_fill(inf)"], f"acc = minimum(acc, {ld})", "acc"),
        "prod_dim": (["acc = tile_fill(1.0)"], f"acc = acc * {ld}", "acc"),
    }
    if n in bodies:
        init, upd, res = bodies[n]
        body = init + ["for k in steps(t):", "    " + upd, f"store(out, t, cast({res}, {T}))"]
    elif n == "logsumexp_dim":
        body = ["m = tile_fill(-inf)", "for k in steps(t):", f"    m = maximum(m, {ld})",
                "s = tile_fill(0.0)", "for k in steps(t):", f"    s = s + exp({ld} - m)",
                f"store(out, t, cast(m + log(s), {T}))"]
        online = online_logsumexp(ld, step="for k in steps(t):", fill="tile_fill") + [
            f"store(out, t, cast(m + log(s), {T}))"]
        blocked_online = _render(c, "slabs_blocked", online, dim=dim,
                                 doc=f"{n} over axis {dim}, max and sum in one pass.")
        slabs = _slabs_of(c, dim)
        block_max = block_max_slabs(flat_slabs(blocked_online, slabs, 8))
        return [c.cand("slabs", _render(c, "slabs_steps", body, dim=dim, doc=f"{n} over axis {dim}.")),
                c.cand("slabs_online", _render(c, "slabs_steps", online, dim=dim,
                                               doc=f"{n} over axis {dim}, max and sum in one pass.")),
                c.cand("slabs_rows_online", blocked_online),
                c.cand("slabs_flat_online", flat_slabs(blocked_online, slabs, _flat_steps(c))),
                c.cand("slabs_flat_blockmax", block_max),
                c.cand("slabs_flat_blockmax_split", split_slabs(block_max, slabs))]
    elif n == "rms_norm_nchw":
        eps = c.param("eps", 1e-5)
        body = ["s = tile_fill(0.0)", "for k in steps(t):", f"    a = {ld}", "    s = s + a * a",
                f"r = 1.0 / sqrt(s / width(t) + {eps})", "for k in steps(t):",
                f"    store(out, k, cast({ld} * r, {T}))"]
    else:
        raise ProposerError(f"no strided recipe for {n}")
    src = _render(c, "slabs_steps", body, dim=dim, doc=f"{n} over axis {dim}.")
    if n not in bodies:
        return [c.cand("slabs", src)]
    # beside it: several steps a copy, folded in partial rows (slabs(rows=...), see the template)
    blocked = _render(c, "slabs_blocked", body, dim=dim, doc=f"{n} over axis {dim}.")
    slabs = _slabs_of(c, dim)
    flat = flat_slabs(blocked, slabs, _flat_steps(c))
    return [c.cand("slabs", src), c.cand("slabs_rows", blocked), c.cand("slabs_flat", flat),
            c.cand("slabs_flat_split", split_slabs(flat, slabs))]


def _norm_rows(c: _Ctx, dims: int) -> int:
    """The rows a row op's loop walks: the input's leading dims (all but ``dims``), times the
    groups of a group norm."""
    shape = [int(d) for d in c.task.inputs[0].shape]
    if c.task.name == "group_norm":  # rows(dims=rank - 1, groups=G): N x G rows
        return shape[0] * int(c.p["num_groups"])
    return math.prod(shape[:len(shape) - dims])


def _slabs_of(c: _Ctx, dim: int) -> int:
    """A: the number of slabs of x seen as [A, K, B] around ``dim``."""
    return math.prod(c.task.inputs[0].shape[:dim])


def _flat_steps(c: _Ctx) -> int:
    """Steps a flat copy by default: twice as many rows of a 16-bit input fit UB (see .flat)."""
    return 8 if c.T in ("f16", "bf16") else 4


MIDDIM = ("max_middim", "sum_dim", "mean_dim", "min_dim", "prod_dim", "logsumexp_dim", "rms_norm_nchw")


# ---------------------------------------------------------------- global two-pass ops
def _global_two_pass(c: _Ctx) -> list[Candidate]:
    n, T = c.task.name, c.T
    if n == "frobenius_norm":
        body1 = ["a = cast(load(x, t), f32)", "ss = total_sum(a * a)"]
        mid = ["inv = 1.0 / sqrt(ss)"]
        body2 = [f"store(out, t, cast(cast(load(x, t), f32) * inv, {T}))"]
    elif n == "lamb":
        f = lambda s: _fmt(c, s)  # noqa: E731
        upd = [f("m = {beta1} * exp_avg_ + (1.0 - {beta1}) * grad_"),
               f("v = {beta2} * exp_avg_sq_ + (1.0 - {beta2}) * grad_ * grad_"),
               f("u = (m / bc1) / (sqrt(v / bc2) + {eps}) + {weight_decay} * param_")]
        body1 = _loads(c) + upd + ["wn = total_sum(param_ * param_)", "un = total_sum(u * u)"]
        mid = ["trust = sqrt(wn) / sqrt(un)"]
        body2 = _loads(c) + upd + [f("store(out, t, cast(param_ - {lr} * trust * u, " + T + "))")]
    else:
        raise ProposerError(f"no two-pass recipe for {n}")
    prelude = [_fmt(c, "bc1 = 1.0 - {beta1} ** step"), _fmt(c, "bc2 = 1.0 - {beta2} ** step")] \
        if n == "lamb" else []
    src = _render(c, "tiles_map", body1, prelude=prelude, doc=f"{n}: a global reduction, then a "
                  "second pass over the same tiles that uses it (cores meet at a SyncAll).")
    loop2 = ["    for t in tiles(" + c.tensors[0] + ", tile=TILE, cores=CORES, depth=DEPTH):"]
    src = src.rstrip() + "\n" + _indent(mid, 4) + "\n" + "\n".join(loop2) + "\n" + _indent(body2, 8) + "\n"
    return [c.cand("two_pass", src)]


# ---------------------------------------------------------------- per-channel statistics
def _batch_norm(c: _Ctx) -> list[Candidate]:
    """Training-mode batch norm: per channel, mean and biased variance over N and the
    spatial dims. A row is one channel: the strided set x[:, k, ...] (rows(axis=1))."""
    T, eps = c.T, c.param("eps", 1e-5)
    ld = "cast(load(x, c), f32)"
    cores = balanced_cores(int(c.task.inputs[0].shape[1]))
    two_pass = (_acc_chunks(["s = row_fill(0.0)"], [f"s = s + row_sum({ld})"]) + ["mean = s / width(t)"]
                + _acc_chunks(["v = row_fill(0.0)"], [f"d = {ld} - mean", "v = v + row_sum(d * d)"])
                + [f"rstd = rsqrt(v / width(t) + {eps})"])
    out = ["for c in chunks(t, CHUNK):", f"    store(out, c, cast(({ld} - mean) * rstd, {T}))"]
    cands = []
    for kind, stats, how in (("channels_onepass", shifted_moments(ld, "width(t)", eps), " Statistics in one "
                              "pass (shifted sums)."), ("channels", two_pass, "")):
        src = _render(c, "rows_chunked", stats + out, rowargs=", axis=1",
                      doc="batch norm (training statistics), one channel per row." + how)
        src = src.replace("    ROWS = tunable(pow2(1, 16), default=1)\n", "").replace("rows=ROWS", "rows=1")
        cands.append(c.cand(kind, with_cores_default(src, cores)))
    return cands


# ---------------------------------------------------------------- pooling
def _pool(c: _Ctx) -> list[Candidate]:
    n, T = c.task.name, c.T
    dims = int(n[-2])
    k, st, pd = int(c.p["kernel_size"]), int(c.p["stride"]), int(c.p["padding"])
    ld = "cast(load(x, w), f32)"
    if n.startswith("max"):
        body = ["acc = tile_fill(-inf)", "for w in taps(t):", f"    acc = maximum(acc, {ld})",
                f"store(out, t, cast(acc, {T}))"]
        fill = "-inf"
    else:  # count_include_pad: the divisor is always the full window
        body = ["acc = tile_fill(0.0)", "for w in taps(t):", f"    acc = acc + {ld}",
                f"store(out, t, cast(acc / {float(k ** dims)}, {T}))"]
        fill = "0.0"
    src = _render(c, "windows_taps", body, dims=dims, kernel=k, stride=st, padding=pd, fill=fill,
                  doc=f"{n}: kernel {k}, stride {st}, padding {pd}.")
    if dims == 1:  # 2048 outputs a chunk: the halo and the alignment over-read are 3%, not 6%
        src = src.replace("CHUNK = tunable(pow2(64, 4096), default=1024)", "CHUNK = tunable(pow2(64, 4096), default=2048)", 1)
    out = [c.cand("windows", src)]
    if dims == 1:  # the halo: a chunk's first 512 B, staged by the chunk before, kept in UB
        out.append(c.cand("windows_carry", src.replace("depth=DEPTH):", "depth=DEPTH, carry=True):", 1).replace(
            '"""', '"""A chunk\'s first 512 B (the previous chunk staged them) kept in UB. ', 1)))
    how = "max" if n.startswith("max") else "sum"
    if dims > 1 and (T != "bf16" or how == "sum"):  # separable: the (kd, kh) input rows folded
        # elementwise, then the kw taps (a max fold runs Max on the input's dtype: the vector unit
        # has none for bf16; a sum of 16-bit rows is folded in fp32, see dsl/lowering/compute_windows.py)
        sep = src.replace(f"fill={fill},", f"fill={fill}, combine={how},", 1)
        # its staging reads are DMA-latency bound: more output rows per tile by default
        sep = sep.replace("ROWS = tunable(pow2(1, 64), default=16)", "ROWS = tunable(pow2(1, 64), default=32)")
        out.append(c.cand("separable", sep.replace('"""', '"""Separable (rows, then columns). ', 1)))
        if st < k:  # and its staged rows reused by every kh (the ring, folded per output row)
            sring = sep.replace(f"combine={how},", f"combine={how}, reuse=True,", 1)
            sring = _ring_tile(sring) if dims == 2 else sring
            out.append(c.cand("separable_ring", sring.replace(
                '"""', '"""Separable (rows, then columns), staged rows reused by every kh. ', 1)))
            # and what the next tile shares with this one kept in UB: in 2-D the ring rows
            # below the tile, in 3-D the kh-folded planes of the next output depth
            shared = "ring rows the next row tile" if dims == 2 else "kh-folded planes the next output depth"
            cring = sring.replace("reuse=True,", "reuse=True, carry=True,", 1)
            out.append(c.cand("separable_ring_carry", cring.replace(
                '"""', f'"""Separable (rows, then columns), staged rows reused by every kh, the {shared} '
                'shares kept in UB. ', 1)))
    # overlapping windows (stride < kernel): each input row staged once per tile, not once per
    # kh; 8 output rows of 256 columns by default (the (8 - 1) * SH + KH staged rows double
    # buffered fit UB). 2-D only: in 3-D the unfolded taps are vector-bound (27 Gathers an
    # output), slower than the separable fold (modeled 1082-1102 us vs 909 us)
    if dims == 2 and st < k:
        ring = _ring_tile(src.replace(f"fill={fill},", f"fill={fill}, reuse=True,", 1))
        out.append(c.cand("ring", ring.replace('"""', '"""Staged rows reused by every kh (a ring). ', 1)))
    return out


def _ring_tile(src: str) -> str:
    """A 2-D ring's default tile: 8 output rows of 256 columns, so its (8 - 1) * SH + KH
    staged rows fit UB double buffered (32 x 1024 does not)."""
    for old, new in (("ROWS = tunable(pow2(1, 64), default=16)", "ROWS = tunable(pow2(1, 64), default=8)"),
                     ("ROWS = tunable(pow2(1, 64), default=32)", "ROWS = tunable(pow2(1, 64), default=8)"),
                     ("CHUNK = tunable(pow2(64, 4096), default=1024)", "CHUNK = tunable(pow2(64, 4096), default=256)")):
        src = src.replace(old, new, 1)
    return src


POOLS = ("avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d")


# ---------------------------------------------------------------- scans
def _scan(c: _Ctx) -> list[Candidate]:
    """Scans along dim 1: the last dim of a 2-D tensor (rows, vectorised Hillis-Steele in UB,
    a carry between column chunks) or the middle dim of a 3-D one (slabs: a running
    accumulator over the steps, vectorised over the trailing dim)."""
    n, T = c.task.name, c.T
    rank = len(c.task.inputs[0].shape)
    dtypes = {"mask": "bool"}
    if n == "masked_cumsum":
        ld = "cast(load(x, {at}), f32) * cast(load(mask, {at}), f32)"
    else:
        ld = "cast(load(x, {at}), f32)"
    if rank == 3 and _dim(c) == 1:
        step = ld.format(at="k")
        body = {
            "cumsum": ["acc = tile_fill(0.0)", "for k in steps(t):", f"    acc = acc + {step}",
                       f"    store(out, k, cast(acc, {T}))"],
            "masked_cumsum": ["acc = tile_fill(0.0)", "for k in steps(t):", f"    acc = acc + {step}",
                              f"    store(out, k, cast(acc, {T}))"],
            "cumprod": ["acc = tile_fill(1.0)", "for k in steps(t):", f"    acc = acc * {step}",
                        f"    store(out, k, cast(acc, {T}))"],
            "cumsum_exclusive": ["acc = tile_fill(0.0)", "for k in steps(t):",
                                 f"    store(out, k, cast(acc, {T}))", f"    acc = acc + {step}"],
            "cumsum_reverse": ["tot = tile_fill(0.0)", "for k in steps(t):", f"    tot = tot + {step}",
                               "acc = tile_fill(0.0)", "for k in steps(t):",
                               f"    store(out, k, cast(tot - acc, {T}))", f"    acc = acc + {step}"],
            "logcumsumexp": ["m = tile_fill(-inf)", "for k in steps(t):", f"    m = maximum(m, {step})",
                             "acc = tile_fill(0.0)", "for k in steps(t):", f"    acc = acc + exp({step} - m)",
                             f"    store(out, k, cast(m + log(acc), {T}))"],
        }[n]
        out = [c.cand("slabs", _render(c, "slabs_steps", body, dim=1, dtypes=dtypes,
                                       doc=f"{n} along axis 1 (a strided running accumulator)."))]
        if n == "cumsum_reverse":  # the steps from the end: a running sum, nothing subtracted
            rev = ["acc = tile_fill(0.0)", "for k in steps(t, reverse=True):", f"    acc = acc + {step}",
                   f"    store(out, k, cast(acc, {T}))"]
            out.append(c.cand("slabs_reverse", _render(c, "slabs_steps", rev, dim=1, dtypes=dtypes, doc=(
                f"{n} along axis 1: the steps walked from the end (no total minus prefix)."))))
        return out
    if rank != 2:
        raise ProposerError(f"task {n!r}: scans are proposed along dim 1 of 2-D or 3-D tensors")
    a = ld.format(at="c")
    op, ident, fin = "sum", "0.0", "s"
    pre: list[str] = []
    if n == "cumprod":
        op, ident = "prod", "1.0"
    elif n == "cumsum_exclusive":
        fin = "s - a"
    elif n == "cumsum_reverse":
        pre = _acc_chunks(["tot = row_fill(0.0)"], [f"tot = tot + row_sum({a})"])
        fin = "tot - s + a"
    elif n == "logcumsumexp":
        pre = _acc_chunks(["m = row_fill(-inf)"], [f"m = maximum(m, row_max({a}))"])
        fin = "m + log(s)"
    val = f"exp({a} - m)" if n == "logcumsumexp" else a
    body = pre + [f"carry = row_fill({ident})", "for c in chunks(t, CHUNK):", f"    a = {a}",
                  f"    s = scan_{op}({val if n == 'logcumsumexp' else 'a'}, carry)",
                  f"    store(out, c, cast({fin}, {T}))", "    carry = row_last(s)"]
    doc = f"{n} along the last dim: a vectorised scan per chunk, carried across chunks."
    out = [c.cand("chunked", _render(c, "rows_chunked", body, dtypes=dtypes, doc=doc))]
    # the blocked scan: each chunk transposed into SCAN_LANES segments scanned side by side
    blocked = [ln.replace(", carry)", f", carry, {SCAN_LANES})") for ln in body]
    # logcumsumexp in one read: the running max rises per chunk and rescales the carry
    online = ["m = row_fill(-inf)", "carry = row_fill(0.0)", "for c in chunks(t, CHUNK):", f"    a = {a}",
              "    mn = maximum(m, row_max(a))", f"    s = scan_sum(exp(a - mn), carry * exp(m - mn), {SCAN_LANES})",
              f"    store(out, c, cast(mn + log(s), {T}))", "    carry = row_last(s)", "    m = mn"]
    out.append(c.cand("blocked", _render(c, "rows_chunked", blocked, dtypes=dtypes, doc=doc + (
        f" Blocked scan: {SCAN_LANES} segments per chunk advanced together, two Gathers per element."))))
    if n == "cumsum_reverse":
        out += _reverse_scan(c, a, T, dtypes, doc)
    if n == "logcumsumexp":
        out.append(c.cand("online", _render(c, "rows_chunked", online, dtypes=dtypes, doc=doc + (
            " One read: the running max and the carry rescaled per chunk; blocked scan."))))
    if n in ("masked_cumsum", "logcumsumexp", "cumsum_reverse"):
        # a mask queue, the online rescaling's temporaries or the reverse tables leave no room
        # for double buffering at chunks of 4096 (the first feasible falls to DEPTH=1, or the
        # vector pipe saturates): chunks of 2048 by default (modeled 1.1-1.5x faster)
        out[1:] = [Candidate(x.name, _chunk_default(x.source, 2048), origin=x.origin) for x in out[1:]]
    return out + [Candidate(x.name + "_chunk_tables", _tables_per_chunk(x.source), origin=x.origin)
                  for x in out if f", {SCAN_LANES})" in x.source]


def _tables_per_chunk(src: str) -> str:
    """A blocked-scan candidate whose Gather tables are rebuilt in every chunk (``scan_*(v,
    carry, lanes, 0)``) instead of once per chunk width: offered beside the hoisted form, as
    the model ranks them differently per op (modeled, model 2.1, default shapes: logcumsumexp
    online 818.6 us hoisted, 762.6 us per chunk; cumsum blocked 758.8 us hoisted, 793.4 us per chunk)."""
    return re.sub(rf"(scan_\w+\(.*), {SCAN_LANES}\)", rf"\1, {SCAN_LANES}, 0)", src)


def _chunk_default(src: str, chunk: int) -> str:
    return src.replace("CHUNK = tunable(pow2(256, 16384), default=4096)",
                       f"CHUNK = tunable(pow2(256, 16384), default={chunk})", 1)


def _reverse_scan(c: _Ctx, a: str, T: str, dtypes: dict, doc: str) -> list[Candidate]:
    """A true reverse scan: the chunks from the row's end, each scanned backwards
    (``rscan_sum``), the carry the chunk's first element — total minus prefix cancels at the
    row's tail, this adds the same terms in the reference's order of magnitude."""
    def body(lanes: str) -> list[str]:
        return ["carry = row_fill(0.0)", "for c in chunks(t, CHUNK, reverse=True):", f"    a = {a}",
                f"    s = rscan_sum(a, carry{lanes})", f"    store(out, c, cast(s, {T}))",
                "    carry = row_first(s)"]
    return [c.cand("reverse", _render(c, "rows_chunked", body(""), dtypes=dtypes, doc=doc + (
                " Reverse order: chunks from the row's end, no total minus prefix."))),
            c.cand("reverse_blocked", _render(c, "rows_chunked", body(f", {SCAN_LANES}"), dtypes=dtypes,
                                              doc=doc + " Reverse order, blocked scan."))]


SCAN_LANES = 64  # segments of the blocked scan: one fp32 vector repeat per op
SCANS = ("cumsum", "cumprod", "cumsum_exclusive", "cumsum_reverse", "masked_cumsum", "logcumsumexp")


# ---------------------------------------------------------------- the recipe book
def _rank(c: _Ctx) -> int:
    return len(c.task.inputs[0].shape)


def _dim(c: _Ctx) -> int:
    """The op's ``dim`` parameter as a non-negative axis of the first input."""
    return int(c.p.get("dim", 1)) % max(_rank(c), 1)


def _last_dim_only(c: _Ctx) -> str | None:
    if _dim(c) == _rank(c) - 1:
        return None
    return (f"its kernel works along the last dim, the task's {c.task.name} runs over dim "
            f"{_dim(c)} of {_rank(c)}")


def _strided_dim_only(c: _Ctx) -> str | None:
    if _dim(c) < _rank(c) - 1:
        return None
    return (f"its kernel walks a strided (not the last) dim, the task's {c.task.name} runs over "
            f"the last dim")


def _scan_dim_one(c: _Ctx) -> str | None:
    if _rank(c) in (2, 3) and _dim(c) == 1:
        return None
    return (f"its kernel scans dim 1 of a 2-D or 3-D tensor, the task's {c.task.name} scans "
            f"dim {_dim(c)} of {_rank(c)}")


def _anything(c: _Ctx) -> str | None:
    return None


@dataclass(frozen=True)
class Recipe:
    """How to write the kernel of one registry op (``build``) and where that kernel is right
    beyond the op's own computation and layout (``limits``: None, or why not)."""

    build: Callable[[_Ctx], list[Candidate]]
    limits: Callable[[_Ctx], str | None] = _anything


def _book() -> dict[str, Recipe]:
    book: dict[str, Recipe] = {}
    for n, expr in ACTIVATIONS.items():
        book[n] = Recipe(lambda c, e=expr: _map_candidates(
            c, [e], doc=f"{c.task.name}, elementwise, computed in f32."))
    for n, expr in BINARY.items():
        book[n] = Recipe(lambda c, e=expr: _map_candidates(
            c, [e], doc=f"{c.task.name} of two same-shape tensors."))
    for n, expr in SCALED.items():
        book[n] = Recipe(lambda c, e=expr: _map_candidates(
            c, [e], doc=f"{c.task.name}: tensor times a runtime scalar."))
    for n, (pre, body) in OPTIMIZERS.items():
        book[n] = Recipe(lambda c, pre=pre, body=body: _map_candidates(
            c, body, prelude=pre, doc=f"one fused {c.task.name} step; returns the new parameter."))
    for n in POINTWISE_LOSSES:
        book[n] = Recipe(_pointwise_loss)
    for n in ("kl_div", "cosine_similarity_loss", "triplet_margin_loss", "cross_entropy"):
        book[n] = Recipe(_losses_rows)
    for n in ROWWISE:
        book[n] = Recipe(_rowwise, _last_dim_only if n in ("softmax", "log_softmax") else _anything)
    book["max_dim"] = Recipe(_rowwise, _last_dim_only)
    for n in MIDDIM:
        book[n] = Recipe(_middim, _strided_dim_only)
    for n in ("frobenius_norm", "lamb"):
        book[n] = Recipe(_global_two_pass)
    for n in SCANS:
        book[n] = Recipe(_scan, _scan_dim_one)
    book["batch_norm"] = Recipe(_batch_norm)
    for n in POOLS:
        book[n] = Recipe(_pool)
    return book


RECIPES: dict[str, Recipe] = _book()


class RecipeProposer:
    """Proposes a recipe's candidates for a task whose reference is that recipe's registry
    op (see :mod:`.recipe_match`); declines, naming the nearest recipe, otherwise."""

    name = "recipe"

    def propose(self, task: Task) -> list[Candidate]:
        T = DTYPE_DSL.get(task.dtype)
        if T is None:
            raise Declined(f"dtype {task.dtype} has no DSL type")

        def ctx(m: Match) -> _Ctx:
            return _Ctx(m.twin, T, dict(m.params), label=task.name)

        m = first_match(task, list(RECIPES), "vector recipe", lambda m: RECIPES[m.op].limits(ctx(m)))
        return RECIPES[m.op].build(ctx(m))
