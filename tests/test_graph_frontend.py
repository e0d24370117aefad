"""The graph frontend (search/graph): ATen trace -> primitives -> forms -> DSL candidates.

Candidates are checked end to end in the emulator (reduced shapes, as ``ascendcraft
check`` does): the KernelBench-format files in tests/taskfiles/ (ops the registry lacks)
and every registry task the frontend claims to handle; the others (and the files in
tests/taskfiles/refused/) must be refused with a one-paragraph ProposerError naming the
ATen op or the reason.
"""

from __future__ import annotations

import os
import resource
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import networkx as nx
import pytest
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.builtin import ProposerError
from ascendcraft.search.graph import build_plan, propose_from_graph, trace_task

from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.tasks.registry import get_task, list_tasks
from ascendcraft.tasks.taskfile import load_task_file

SOC = "Ascend910B2"
TASKFILES = sorted((Path(__file__).parent / "taskfiles").glob("*.py"))
REFUSED_DIR = Path(__file__).parent / "taskfiles" / "refused"
WORKERS = max(1, min(4, os.cpu_count() or 1))

#: registry ops the frontend builds kernels for (everything but the matmul family)
HANDLED = {
    # activation
    "celu", "elu", "gelu", "gelu_tanh", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
    "log_softmax", "logsigmoid", "mish", "relu", "relu6", "selu", "sigmoid", "silu", "softmax",
    "softplus", "softsign", "swish", "tanh",
    # elementwise
    "add", "div", "maximum", "mul", "mul_scalar", "sub",
    # reduce
    "logsumexp_dim", "max_dim", "max_middim", "mean_dim", "min_dim", "prod_dim", "sum_dim",
    "sum_lastdim",
    # normalization (incl. per-channel statistics, channel groups and a global norm)
    "instance_norm", "l1_norm", "l2_norm", "layer_norm", "layer_norm_2d", "rms_norm",
    "rms_norm_nchw", "batch_norm", "group_norm", "frobenius_norm",
    # optimizer (one elementwise update; lamb: a global trust ratio) and math
    "adagrad", "adam", "adamw", "rmsprop", "sgd_momentum", "lamb",
    "matrix_scalar_multiplication",
    # losses: whole-tensor reductions to one scalar (cross entropy: pick by class index)
    "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "kl_div", "hinge_loss",
    "cosine_similarity_loss", "triplet_margin_loss", "cross_entropy",
    # scans (masked: a multiply; exclusive: cat + narrow; reverse: flip + cumsum + flip)
    "cumsum", "cumprod", "logcumsumexp", "masked_cumsum", "cumsum_exclusive", "cumsum_reverse",
    # pooling
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
}

#: registry ops the frontend refuses, with a phrase the error must contain
REFUSED: dict[str, str] = {}

#: task files (under taskfiles/refused) the frontend must refuse, with the phrase
REFUSED_FILES = {"channel_scale_midsum": "does not fit the slabs(dim=2)"}


def evaluate(task, first_correct: bool = False, seeds: tuple[int, ...] = (0, 1)) -> list[dict]:
    """Run the frontend's candidates through the evaluator (as ``ascendcraft check``)."""
    ev = Evaluator(task, SOC, seeds=seeds)
    out = []
    for cand in propose_from_graph(task):
        entry = {"candidate": cand.name, "source": cand.source}
        try:
            prep = prepare(cand.name, cand.source)
        except DslError as e:
            entry.update(status="dsl_error", correct=False, message=str(e))
            out.append(entry)
            continue
        params = first_feasible(ev, prep)
        if params is None:
            entry.update(status="infeasible", correct=False, message=ev.feasible(prep, {}))
            out.append(entry)
            continue
        res = ev.evaluate(prep, params, timing=False)
        entry.update(status=res.status, correct=res.correct, message=res.message)
        out.append(entry)
        if first_correct and res.correct:
            break
    return out


def _summary(results: list[dict]) -> str:
    return "; ".join(f"{r['candidate']}: {r['status']} {r.get('message', '')[:200]}"
                     for r in results)


# ------------------------------------------------------------------ unit level
def test_trace_is_an_aten_networkx_graph_on_meta() -> None:
    ag = trace_task(get_task("softmax"))
    assert isinstance(ag.graph, nx.DiGraph)
    names = [ag.node(n)["name"] for n in ag.op_nodes()]
    assert names == ["aten._softmax.default"]
    assert ag.meta(ag.outputs[0]) == ((4096, 65536), ag.meta(ag.outputs[0])[1])
    assert nx.is_directed_acyclic_graph(ag.graph)


def test_structures_per_pattern() -> None:
    kinds = {name: [c.name.split("/graph-")[1] for c in propose_from_graph(get_task(name))]
             for name in ("gelu", "softmax", "layer_norm", "max_middim", "rms_norm")}
    assert kinds["gelu"] == ["tiles"]
    # both structures proposed, the chunked statistics in one online pass, and (rows too wide
    # for UB) the chunked ones with their first pass holding what UB keeps of each row tile
    assert sorted(kinds["softmax"]) == ["chunked", "chunked-online", "chunked-online_hold", "chunked_hold", "rows"]
    assert kinds["softmax"][0] == "chunked"  # 65536-wide rows do not fit UB whole
    # the mean and the centred sum of squares in one chunks pass (shifted moments)
    assert kinds["layer_norm"] == ["rows", "chunked", "chunked-online"]
    # blocked steps offered beside, and read flat (B = 1023: its rows are not 512 B aligned),
    # and that with K split across cores (one pass of folds: slabs(split=...))
    assert kinds["max_middim"] == ["slabs", "slabs_rows", "slabs_flat", "slabs_flat_split"]
    assert sorted(kinds["rms_norm"]) == ["chunked", "rows"]


def test_elementwise_chain_is_one_fused_expression() -> None:
    (cand,) = propose_from_graph(get_task("gelu_tanh"))
    body = [ln.strip() for ln in cand.source.splitlines() if "store(" in ln or " = " in ln]
    stores = [ln for ln in body if ln.startswith("store(")]
    assert len(stores) == 1 and "tanh(" in stores[0]


def test_broadcast_forms() -> None:
    bias = load_task_file(Path(__file__).parent / "taskfiles" / "addcmul_bcast.py")
    src = [c.source for c in propose_from_graph(bias)]
    assert all("load_bcast(t1," in s for s in src)
    per_row = load_task_file(Path(__file__).parent / "taskfiles" / "row_scale_clamp.py")
    cands = propose_from_graph(per_row)
    # a per-row operand is read once per row, before the column chunks of a chunked loop
    assert [c.name.split("/graph-")[1] for c in cands] == ["rows", "chunked"]
    assert all("load_per_row(scale, t)" in c.source for c in cands)
    chunked = cands[1].source
    assert chunked.index("load_per_row(scale, t)") < chunked.index("for c in chunks(t, CHUNK)")


def test_shape_derived_constant_uses_width() -> None:
    task = load_task_file(Path(__file__).parent / "taskfiles" / "mean_by_shape.py")
    for cand in propose_from_graph(task):
        assert "width(t)" in cand.source and "8192" not in cand.source


def test_module_parameters_fold_when_uniform() -> None:
    task = load_task_file(Path(__file__).parent / "taskfiles" / "layernorm_module.py")
    plan = build_plan(task)
    assert plan.domain.kind == "rows"
    assert "native_layer_norm.default" in plan.aten_ops


def test_scalar_input_stays_a_runtime_scalar() -> None:
    (cand,) = propose_from_graph(get_task("mul_scalar"))
    assert "s: Scalar[f32]" in cand.source and "load(x, t) * s" in cand.source


def _task_file(tmp_path: Path, name: str, forward: str, inputs: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        f"class Model(nn.Module):\n    def forward(self, x, y):\n        return {forward}\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n"
        "def get_init_inputs():\n    return []\n")
    return p


@pytest.mark.parametrize("name,forward,phrase", [
    ("sort", "torch.sort(x + y, dim=1)[0]", "aten.sort.default: index/sorting results"),
    ("argall", "torch.argmax(x + y)", "aten.argmax.default: argmax over every element (dim=None)"),
    ("cat", "torch.cat([x, y], dim=1)", "a concatenation"),
    ("pool", "torch.nn.functional.adaptive_avg_pool2d(x + y, 5)", "its window follows the input's"),
    ("avgpad", "torch.nn.functional.avg_pool2d(x + y, 3, 1, 1, count_include_pad=False)",
     "pooling a computed value with padding > 0"),
    ("mm", "x @ y", "aten.mm.default: matrix products run on the cube unit"),
    ("chan_midsum", "(x * y.view(1, -1, 1, 1)).sum(dim=2)",
     "input 'y' of shape [64] does not fit the slabs(dim=2)"),
    ("gprod", "torch.prod(x * y)", "no total product"),
])
def test_refusals_name_the_op(tmp_path: Path, name: str, forward: str, phrase: str) -> None:
    big = "torch.randn(8, 64, 32, 32)"
    inputs = (f"{big}, torch.randn(64)" if name == "chan_midsum" else
              f"{big}, {big}" if name in ("pool", "avgpad") else
              "torch.randn(64, 64), torch.randn(64, 64)")
    task = load_task_file(_task_file(tmp_path, name, forward, inputs))
    with pytest.raises(ProposerError) as err:
        propose_from_graph(task)
    msg = str(err.value)
    assert phrase in msg, msg
    assert "\n" not in msg and msg.startswith(f"task {name!r}: the graph frontend")


@pytest.mark.parametrize("stem", sorted(REFUSED_FILES))
def test_refused_task_files(stem: str) -> None:
    task = load_task_file(REFUSED_DIR / f"{stem}.py")
    with pytest.raises(ProposerError) as err:
        propose_from_graph(task)
    assert REFUSED_FILES[stem] in str(err.value), str(err.value)


def _body(source: str) -> list[str]:
    return [ln.strip() for ln in source.splitlines()
            if not ln.strip().startswith(("@", "def ", '"""')) and "tunable(" not in ln]


def test_loss_is_a_total_and_a_scalar_store() -> None:
    (cand,) = propose_from_graph(load_task_file(TASKFILES[0].parent / "logcosh_loss.py"))
    body = _body(cand.source)
    assert body[0].startswith("for t in tiles(")
    assert any(ln.startswith("tot") and "= total_sum(" in ln for ln in body)
    assert body[-1].startswith("store(y, ") and "/ numel(predictions))" in body[-1]
    # a divisor written as x.shape[0] becomes the host scalar size(x, 0)
    (cand,) = propose_from_graph(load_task_file(TASKFILES[0].parent / "sse_per_batch.py"))
    assert "/ size(predictions, 0))" in cand.source and "4096.0" not in cand.source


def test_per_row_terms_then_mean_and_pick() -> None:
    cands = propose_from_graph(get_task("cross_entropy"))
    assert [c.name.split("/graph-")[1] for c in cands] == ["rows", "chunked", "chunked-online"]
    for c in cands:
        assert "targets: In[i64]" in c.source and "pick(logits, t, targets)" in c.source
        assert "total_sum(" in c.source and "store(y, " in c.source
    (cand, _) = propose_from_graph(load_task_file(TASKFILES[0].parent / "row_dist_mean.py"))
    assert "total_sum(sqrt(row_sum(" in cand.source


def test_global_norm_then_use_is_two_loops() -> None:
    (cand,) = propose_from_graph(get_task("frobenius_norm"))
    body = _body(cand.source)
    heads = [i for i, ln in enumerate(body) if ln.startswith("for t in tiles(")]
    assert len(heads) == 2 and body[heads[0]] == body[heads[1]]
    between = body[heads[0] + 1:heads[1]]
    assert any("total_sum(" in ln for ln in between) and any("sqrt(" in ln for ln in between)
    plan = build_plan(load_task_file(TASKFILES[0].parent / "global_standardize.py"))
    assert plan.loops == 3


def test_scans() -> None:
    cands = {c.name.split("/graph-")[1]: c.source for c in propose_from_graph(get_task("cumsum"))}
    assert list(cands) == ["chunked", "chunked-blocked", "rows", "rows-blocked"]
    assert "scan_sum(load(x, c), carry" in cands["chunked"] and "row_last(" in cands["chunked"]
    assert "scan_sum(load(x, t), row_fill(0.0))" in cands["rows"]
    assert "scan_sum(load(x, t), row_fill(0.0), 64)" in cands["rows-blocked"]  # the blocked scan
    assert ", 64)" in cands["chunked-blocked"]
    rev = propose_from_graph(get_task("cumsum_reverse"))[0].source
    # a true reverse scan: the chunks from the row's end, no total minus prefix
    assert "flip" not in _body(rev) and "row_sum(" not in rev
    assert "chunks(t, CHUNK, reverse=True)" in rev and "rscan_sum(" in rev and "row_first(" in rev
    (mid,) = propose_from_graph(load_task_file(TASKFILES[0].parent / "cumsum_middim.py"))
    assert "for k in steps(t):" in mid.source and "store(y, k, acc" in mid.source


@pytest.mark.parametrize("name,forward,expect", [
    ("excl", "torch.cat([torch.zeros_like(x[:, :1]), torch.cumsum((x * y)[:, :-1], dim=1)], 1)",
     "scan_sum("),
    ("cummin", "torch.cummin(x + y, dim=1).values", "scan_max("),
    ("bce", "torch.nn.functional.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(y))",
     "total_sum("),
    ("chanmean", "(x * y).mean(dim=(0, 2))", "axis=1"),
])
def test_more_forms_are_recognised(tmp_path: Path, name: str, forward: str, expect: str) -> None:
    inputs = ("torch.randn(8, 64, 32), torch.randn(8, 64, 32)" if name == "chanmean" else
              "torch.randn(64, 64), torch.randn(64, 64)")
    cands = propose_from_graph(load_task_file(_task_file(tmp_path, name, forward, inputs)))
    assert all(expect in c.source for c in cands), cands[0].source


@pytest.mark.parametrize("name,forward,inputs,expect", [
    # no input has the result's shape: the loop walks the output, operands per row / column
    ("outer", "torch.tanh(x * y)", "torch.randn(96, 1), torch.randn(1, 80)",
     ["for t in rows(y_1, ", "load_per_row(x, t)", "load_bcast(y, "]),
    # an operand broadcast along a middle axis is a reduced slab tile, steps walk the axis
    ("slab", "x * y - y", "torch.randn(4, 30, 20), torch.rand(4, 1, 20)",
     ["for t in slabs(x, dim=1", "= load(y, t)", "for k in steps(t):"]),
    # a per-row mask compared inside where(): lifted to a full tile
    ("where_row", "torch.where(y > 0.5, x, x * 0.1)", "torch.randn(64, 64), torch.rand(64, 1)",
     ["where((tile_fill(0.0) + load_per_row(y, t)) > 0.5", "where((tile_fill(0.0) + a0) > 0.5"]),
    # x ** y with a tensor exponent and a base that cannot be negative
    ("tpow", "(x.abs() + 0.5) ** y", "torch.randn(64, 64), torch.randn(64, 64)",
     ["exp(", "log(", "== 0.0, 1.0"]),
])
def test_broadcasts_and_powers_beyond_same_shape(tmp_path: Path, name: str, forward: str,
                                                 inputs: str, expect: list[str]) -> None:
    cands = propose_from_graph(load_task_file(_task_file(tmp_path, name, forward, inputs)))
    for phrase in expect:
        assert any(phrase in c.source for c in cands), (phrase, cands[0].source)


@pytest.mark.parametrize("forward,phrase", [
    ("x ** y", "a base that may be negative"),
    ("(x > y).long()", "output 0 is int64 but not an index"),  # the mask is read as numbers where used; stored as int64 it is not
    ("torch.where(x > 0, y > 0, x < y)", "output 0 is bool but not a comparison"),
])
def test_what_stays_refused_says_why(tmp_path: Path, forward: str, phrase: str) -> None:
    task = load_task_file(_task_file(tmp_path, "refuse", forward,
                                     "torch.randn(64, 64), torch.randn(64, 64)"))
    with pytest.raises(ProposerError, match=phrase):
        propose_from_graph(task)


def test_pooling_and_channels() -> None:
    cand, sep, ring = propose_from_graph(get_task("max_pool2d"))
    assert "windows(x, dims=2, kernel=3, stride=2, padding=1, fill=-inf" in cand.source
    assert "for w in taps(t):" in cand.source
    # beside the plain windows: the separable fold, and (overlapping windows) its carried ring
    assert "fill=-inf, combine=max, rows=ROWS" in sep.source
    assert "combine=max, reuse=True, carry=True," in ring.source
    cand, carried = propose_from_graph(load_task_file(TASKFILES[0].parent / "avgpool1d_k3.py"))
    assert "dims=1, kernel=3, stride=1, padding=1, fill=0.0" in cand.source
    assert "fill=0.0, carry=True," in carried.source
    (cand,) = propose_from_graph(load_task_file(TASKFILES[0].parent / "batchnorm2d_train.py"))
    assert "rows(x, rows=1, axis=1" in cand.source
    # per-channel [C] operands: load_per_row(v, t) before the column chunks; beside it, rows
    # of the last dims reading them per row (load_per_row(v, t, d), tests/test_per_channel_rows.py)
    cand, *views = propose_from_graph(load_task_file(TASKFILES[0].parent / "channel_affine.py"))
    assert views and all("axis=" not in v.source and "load_per_row(scale, t, " in v.source
                         for v in views)
    body = _body(cand.source)
    assert body[0] == "for t in rows(x, rows=1, axis=1, cores=CORES, depth=DEPTH):"
    assert body[1:4] == ["a0 = load_per_row(scale, t)", "a1 = load_per_row(bias, t)",
                         "for c in chunks(t, CHUNK):"]
    (cand,) = propose_from_graph(load_task_file(TASKFILES[0].parent
                                                / "batchnorm_affine_inputs.py"))
    assert "rows(x, rows=1, axis=1" in cand.source and "row_sum(" in cand.source
    assert "load_per_row(weight, t)" in cand.source and "load_per_row(bias, t)" in cand.source
    cands = propose_from_graph(load_task_file(TASKFILES[0].parent / "groupnorm_noaffine.py"))
    assert all("dims=3, groups=4" in c.source for c in cands)


def test_eight_gib_input_is_never_allocated() -> None:
    task = get_task("gelu").with_shape((1 << 15, 1 << 16))  # 2^31 fp32 elements = 8 GiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (cand,) = propose_from_graph(task)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert "tiles(x" in cand.source
    assert grown_mib < 512


# ------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def taskfile_results() -> dict[Path, list[dict]]:
    """Every candidate of every task file, evaluated in parallel (builds dominate)."""
    def run(path: Path) -> list[dict]:
        return evaluate(load_task_file(path), seeds=(0,))

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(TASKFILES, pool.map(run, TASKFILES), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("path", TASKFILES, ids=[p.stem for p in TASKFILES])
def test_taskfile_candidates_are_correct(path: Path, taskfile_results: dict) -> None:
    results = taskfile_results[path]
    assert any(r["correct"] for r in results), _summary(results)
    # a candidate may not fit UB at the task's shapes, but none may compute a wrong result
    bad = [r for r in results if r["status"] not in ("ok", "infeasible")]
    assert not bad, _summary(bad)


@pytest.mark.slow
def test_fp16_and_bf16_are_computed_in_f32() -> None:
    cases = [("bias_gelu.py", "fp16"), ("softmax_temperature.py", "bf16"),
             ("masked_fill_where.py", "fp16"), ("nll_temperature.py", "fp16"),
             ("cumsum_reverse_flip.py", "fp16"), ("batchnorm2d_train.py", "fp16")]

    def run(case):
        fname, dtype = case
        task = load_task_file(Path(__file__).parent / "taskfiles" / fname)
        first = next(s for s in task.inputs if s.is_tensor)
        return case, evaluate(task.with_shape(tuple(first.shape), dtype), first_correct=True,
                              seeds=(0,))

    with ThreadPoolExecutor(WORKERS) as pool:
        for case, results in pool.map(run, cases):
            assert any(r["correct"] for r in results), (case, _summary(results))
            assert "cast(load(" in results[0]["source"]


@pytest.mark.slow
def test_registry_sweep() -> None:
    """Every registry task through the frontend: handled ones must check correct, the rest
    must be refused with a readable reason. Prints the report (pytest -s)."""
    tasks = list_tasks()

    def run(task):
        try:
            results = evaluate(task, first_correct=True, seeds=(0,))
        except ProposerError as e:
            return task, None, str(e)
        return task, results, ""

    with ThreadPoolExecutor(WORKERS) as pool:
        outcomes = list(pool.map(run, tasks))
    handled, refused, failures = [], [], []
    for task, results, err in outcomes:
        if results is None:
            refused.append(f"  {task.name:<30} {err.split(': ', 2)[-1]}")
            if task.category == "matmul" and "cube unit" not in err:
                failures.append(f"{task.name}: unexpected reason: {err}")
            if task.name in HANDLED:
                failures.append(f"{task.name}: refused: {err}")
            elif task.name in REFUSED and REFUSED[task.name] not in err:
                failures.append(f"{task.name}: unexpected reason: {err}")
            continue
        ok = any(r["correct"] for r in results)
        handled.append(f"  {task.name:<30} {'correct' if ok else 'WRONG'} "
                       f"({', '.join(r['candidate'].split('/')[-1] for r in results)})")
        if not ok:
            failures.append(f"{task.name}: {_summary(results)}")
        if task.name in REFUSED:
            failures.append(f"{task.name}: expected a refusal, got candidates")
    print(f"\ngraph frontend: {len(handled)} registry ops handled, {len(refused)} refused")
    print("\n".join(["handled:", *handled, "refused:", *refused]))
    for cat in sorted({t.category for t in tasks} - {"matmul"}):  # the cube unit: refused
        names = {t.name for t in tasks if t.category == cat}
        missing = names - HANDLED - set(REFUSED)
        assert not missing, f"{cat} ops neither handled nor known refusals: {sorted(missing)}"
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name,forward,inputs,structures", [
    # last dim (rows + chunked) and middle dim (slabs), values drawn from 3 levels: many ties,
    # where only the first-index rule gives PyTorch's answer
    ("amax_ties", "torch.argmax(x * y, dim=-1)",
     "torch.randint(0, 3, (6, 300)).float(), torch.randint(1, 3, (6, 300)).float()",
     {"rows", "rows_flat", "chunked"}),  # 1200 B rows: also read flat (one aligned burst a tile)
    ("amin_mid", "torch.argmin(x + y, dim=1, keepdim=True)",
     "torch.randint(0, 3, (3, 17, 40)).float(), torch.randint(0, 2, (3, 17, 40)).float()",
     {"slabs", "slabs_rows", "slabs_flat", "slabs_hold"}),  # also blocks of steps: position(k) a tile of them
    ("maxdim", "torch.max(x - y, dim=0)",
     "torch.randint(0, 4, (23, 5)).float(), torch.randn(23, 5).round()",
     {"slabs", "slabs_rows", "slabs_flat", "slabs_hold"}),
    # running indices: the latest position of the running extreme (eager's tie rule)
    ("cumidx", "torch.cummax(x - y, dim=1)",
     "torch.randint(0, 3, (5, 70)).float(), torch.randint(0, 2, (5, 70)).float()",
     {"rows", "chunked", "rows-blocked", "chunked-blocked"}),
    ("maskand", "torch.logical_and(x > 0, y > 0.5)", "torch.randn(40, 33), torch.rand(40, 1)",
     {"rows", "chunked"}),
])
def test_index_and_bool_results_match_eager_exactly(tmp_path: Path, name: str, forward: str,
                                                    inputs: str, structures: set[str]) -> None:
    task = load_task_file(_task_file(tmp_path, name, forward, inputs))
    results = evaluate(task, seeds=(0,))
    assert {r["candidate"].split("/graph-")[-1] for r in results} == structures
    assert all(r["correct"] for r in results), _summary(results)
    src = results[0]["source"]
    assert ("Out[bool]" in src and "bool))" in src) if name == "maskand" else \
        ("Out[i64]" in src and "position(" in src and "i64))" in src)


def test_an_index_too_wide_for_f32_is_refused(tmp_path: Path) -> None:
    p = _task_file(tmp_path, "wide", "torch.argmax(x + y, dim=0)",
                   "torch.randn(2 ** 24 + 1, 1, device='meta'), torch.randn(1, device='meta')")
    with pytest.raises(ProposerError, match="extent above 2"):
        propose_from_graph(load_task_file(p))


def test_prelu_reads_its_slopes_per_channel() -> None:
    """nn.PReLU(C) is where(x > 0, x, weight * x) with the module's weight as a per-channel input."""
    task = load_task_file(Path(__file__).parent / "taskfiles" / "corpus" / "prelu_module.py")
    cand, *views = propose_from_graph(task)
    assert "rows(x, rows=1, axis=1" in cand.source and "load_per_row(act_weight, t)" in cand.source
    assert "where(a1 > 0.0, a1, a0 * a1)" in cand.source
    # beside it, rows of the last dims reading the slopes per row (tests/test_per_channel_rows.py)
    assert views and all("load_per_row(act_weight, t, " in v.source for v in views)


def test_fp16_intermediates_are_rounded_as_eager_rounds_them(tmp_path: Path) -> None:
    """Each ATen op's fp16 result is rounded (cast to f16 and back) before the next op reads it;
    the op's own decomposition (silu = x * sigmoid(x)) and an f32 chain are not."""
    def source(inputs: str) -> str:
        task = load_task_file(_task_file(tmp_path, "chain", "torch.nn.functional.silu(x) + y", inputs))
        return propose_from_graph(task)[0].source
    half = source("torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)")
    assert half.count("cast(cast(") == 1 and "cast(cast(a0 * sigmoid(a0), f16), f32) +" in half, half
    assert "cast(cast(" not in source("torch.randn(64, 64), torch.randn(64, 64)")


def test_a_pool_of_a_computed_value_is_not_folded_rows_first(tmp_path: Path) -> None:
    # max(x) over rows then taps equals max over taps, but pool(x * y) folded rows-first
    # would multiply sums of rows: only the plain windows (the taps read the product)
    shapes = "torch.randn(2, 3, 20, 24), torch.randn(2, 3, 20, 24)"
    cands = propose_from_graph(load_task_file(_task_file(
        tmp_path, "pool_of_product", "torch.nn.functional.avg_pool2d(x * y, 3, 2)", shapes)))
    assert [c.name.rsplit("/", 1)[1] for c in cands] == ["graph-windows"]
    cands = propose_from_graph(load_task_file(_task_file(
        tmp_path, "pool_of_input", "torch.nn.functional.avg_pool2d(x, 3, 2) * 2.0", shapes)))
    assert [c.name.rsplit("/", 1)[1] for c in cands] == ["graph-windows", "graph-windows-separable",
                                                         "graph-windows-ring"]
