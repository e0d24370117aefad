"""Pooling the graph frontend used to refuse: average pooling whose divisor changes at the
borders (``count_include_pad=False`` with padding, ``ceil_mode``: ``window_recip(t)`` in the
DSL, lowered in ``dsl/lowering/compute_windows.py``), ``windows(ceil=True)``'s output size,
per-dim kernels / strides / paddings (``kernel=(3, 2)``), dilation (``windows(dilation=)``),
``divisor_override``, and named refusals for what still has no form (max pooling's indices,
adaptive windows).
Every candidate of the new corpus files is run on ragged tiles and chunks (4 output rows,
64 columns, 4 cores) over odd sizes, fp32 and fp16, signed data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ascendcraft.dsl.lowering.outputs import OutputShape
from ascendcraft.dsl.parser import DslError
from ascendcraft.search.builtin import ProposerError, propose
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")
HERE = Path(__file__).parent / "taskfiles"
SMALL = {"CORES": 4, "CHUNK": 64, "ROWS": 4}


def _file(stem: str, folder: str = "corpus"):
    return load_task_file(HERE / folder / f"{stem}.py")


def _small(source: str) -> dict[str, int]:
    return {k: v for k, v in SMALL.items() if f"{k} = tunable" in source}


@needs_gxx
@pytest.mark.parametrize("stem", [
    "avgpool3d_exclude_pad",           # 3-D, count_include_pad=False, fp32
    "avgpool2d_ceil_exclude_fp16",     # 2-D, ceil_mode + count_include_pad=False, fp16, odd sizes
    "avgpool1d_ceil_include",          # 1-D, ceil_mode with count_include_pad (clipped at I + P)
    "avgpool2d_tuple_kernel",          # (3, 2) kernel, (2, 1) stride, (1, 0) padding
    "maxpool3d_tuple_ceil_fp16",       # (2, 3, 3) kernel, ceil_mode, fp16
    "maxpool2d_dilation2",             # dilation 2 (taps two apart), padding 1
    "maxpool1d_dilation_ceil_fp16",    # 1-D, dilation 3, ceil_mode, fp16
    "maxpool3d_dilation_tuple",        # dilation (2, 1, 2), tuple kernel / stride / padding
    "avgpool2d_k7_exclude_bf16_module",  # bf16, 7 x 7 window from the constructor, borders excluded
    "avgpool2d_wide_ceil_exclude_fp16",  # fp16, (5, 9) window, ceil_mode, borders excluded
])
def test_every_candidate_is_correct_on_ragged_tiles(stem: str) -> None:
    task = _file(stem)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    cands = propose(task)
    assert cands  # the windows loop and, where they apply, its separable / ring / carry variants
    for cand in cands:
        out = ev.evaluate(prepare(cand.name, cand.source), _small(cand.source), timing=False)
        assert out.status is Status.OK, f"{cand.name}: {out.message}"


def test_the_frontend_writes_the_border_divisor_and_ceil_mode() -> None:
    src = propose_from_graph(_file("avgpool2d_ceil_exclude_fp16"))[0].source
    assert "ceil=True" in src and "window_recip(t)" in src
    src = propose_from_graph(_file("avgpool1d_ceil_include"))[0].source
    assert "ceil=True" in src and "window_recip(t, 1)" in src  # counted in the padded input
    src = propose_from_graph(_file("avgpool2d_tuple_kernel"))[0].source
    assert "kernel=(3, 2), stride=(2, 1), padding=(1, 0)" in src and "window_recip" not in src
    src = propose_from_graph(_file("avgpool2d_divisor_override_attrs"))[0].source
    assert "/ 4.0" in src and "window_recip" not in src


@pytest.mark.parametrize(("stem", "phrase"), [
    ("pool_return_indices", "max pooling's indices (return_indices=True) have no DSL form"),
    ("pool_adaptive_7x7", "kernel = stride = [2, 2]: write that instead"),
])
def test_pooling_refusals_name_their_reason(stem: str, phrase: str) -> None:
    with pytest.raises(ProposerError) as err:
        propose_from_graph(_file(stem, "refused"))
    assert phrase in str(err.value), str(err.value)


@pytest.mark.parametrize("ceil", [False, True])
def test_the_output_shape_rule_is_pytorchs(ceil: bool) -> None:
    for k, s, p in [(3, 2, 1), (4, 3, 1), (2, 2, 0), (3, 3, 1), (5, 2, 2), (2, 3, 1)]:
        for i in range(max(k, 2), 40):
            rule = OutputShape("y", "x", "window", 1, (k, s, p), ceil)
            want = F.avg_pool1d(torch.zeros(1, 1, i), k, s, p, ceil_mode=ceil).shape[-1]
            assert rule.apply([1, 1, i]) == [1, 1, want], (k, s, p, i)
    rule = OutputShape("y", "x", "window", 2, ((3, 2), (2, 1), (1, 0)), ceil)
    want = F.avg_pool2d(torch.zeros(1, 1, 33, 64), (3, 2), (2, 1), (1, 0), ceil_mode=ceil).shape
    assert rule.apply([1, 1, 33, 64]) == list(want)


def _windows_source() -> str:
    return next(c for c in propose(get_task("avg_pool2d")) if c.name.endswith("/windows")).source


def test_dilation_is_written_and_has_no_ring() -> None:
    cands = propose_from_graph(_file("maxpool3d_dilation_tuple"))
    assert "dilation=(2, 1, 2)" in cands[0].source
    assert not [c for c in cands if "reuse=True" in c.source or "carry=True" in c.source]


@pytest.mark.parametrize(("old", "new", "phrase"), [
    ("acc / 9.0", "acc * window_recip(t, 2)", "padded is 0"),
    ("acc = acc + cast(load(x, w), f32)", "acc = acc + cast(load(x, w), f32) * window_recip(t)",
     "outside the taps loop"),
    ("kernel=3,", "kernel=(3, 3, 3),", "a tuple of 2 integers"),
    ("padding=1,", "padding=(2, 1),", "padding <= kernel / 2"),
])
def test_bad_border_forms_are_refused(old: str, new: str, phrase: str) -> None:
    src = _windows_source()
    assert old in src
    with pytest.raises(DslError, match=phrase):
        prepare("avg_pool2d/bad", src.replace(old, new, 1)).lower({})


@pytest.mark.parametrize(("old", "new", "phrase"), [
    ("acc / 9.0", "acc * window_recip(t)", "undilated windows"),
    ("fill=0.0,", "fill=0.0, reuse=True,", "no reuse= or carry="),
])
def test_dilated_windows_refuse_what_they_cannot_do(old: str, new: str, phrase: str) -> None:
    src = _windows_source().replace("padding=1,", "padding=1, dilation=2,", 1).replace(old, new, 1)
    with pytest.raises(DslError, match=phrase):
        prepare("avg_pool2d/bad", src).lower({})


def test_window_recip_outside_a_windows_loop_is_refused() -> None:
    src = next(c for c in propose(get_task("relu"))).source
    bad = src.replace("store(out, t, ", "store(out, t, window_recip(t) * ", 1)
    assert bad != src
    with pytest.raises(DslError, match="windows loop variable"):
        prepare("relu/bad", bad).lower({})


@needs_gxx
@pytest.mark.parametrize("name", ["avg_pool2d", "max_pool2d"])
def test_a_one_row_plane_reads_no_row_past_it(name: str) -> None:
    # IH = 1, kernel 3, stride 2, padding 1: kh = 2 reads input row 1, which does not exist
    # (the bound (IH - 1 + PH - kh) / SH once truncated -1 / 2 to row 0: the next plane's row)
    task = get_task(name).with_shape((2, 3, 1, 9), "fp32")
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    cand = next(c for c in propose(task) if c.name.endswith("/windows"))
    out = ev.evaluate(prepare(cand.name, cand.source), _small(cand.source), timing=False)
    assert out.status is Status.OK, out.message


@pytest.mark.parametrize("stem", ["avgpool2d_k7_exclude_bf16_module", "avgpool2d_wide_ceil_exclude_fp16",
                                  "avgpool2d_ceil_exclude_fp16"])
def test_16_bit_border_averages_fold_in_fp32(stem: str) -> None:
    """The separable fold and its ring are offered for 16-bit average pools with a border
    divisor: each staged row is cast up and added in fp32, the kw taps are gathered from the
    fp32 fold, and the divide and the one cast down follow (no 16-bit partial sums)."""
    cands = {c.name.split("/")[-1]: c for c in propose_from_graph(_file(stem))}
    assert {"graph-windows-separable", "graph-windows-ring"} <= set(cands), sorted(cands)
    for kind in ("graph-windows-separable", "graph-windows-ring"):
        src = prepare(kind, cands[kind].source).lower({}).launches[0].source
        assert "LocalTensor<float> sacc" in src and "RoundMode::CAST_NONE" in src, kind
        assert not [ln for ln in src.splitlines() if "Add(sacc" in ln and "Up" not in ln and "fd" not in ln], kind


@needs_gxx
def test_registry_bf16_average_pool_offers_the_fp32_fold() -> None:
    task = get_task("avg_pool2d").with_shape((2, 3, 17, 29), "bf16")
    cands = {c.name.split("/")[-1]: c for c in propose(task)}
    assert {"separable", "separable_ring", "separable_ring_carry"} <= set(cands), sorted(cands)
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    for kind in ("separable", "separable_ring", "separable_ring_carry"):
        out = ev.evaluate(prepare(kind, cands[kind].source), _small(cands[kind].source), timing=False)
        assert out.status is Status.OK, f"{kind}: {out.message}"
