"""The blocked scan (``scan_sum(v, carry, lanes)``, lowered in ``dsl/lowering/compute_ops.py``):
correct for every scan recipe on rows walked in several chunks with a ragged tail (the
segments of the last chunk padded past the row's end), fp32 and fp16 inputs, the task's and
signed data (the evaluator checks both); a tail narrower than the lanes falls back to
Hillis-Steele in the same kernel; the one-read logcumsumexp (running max per chunk, carry
rescaled) is correct too; and the modeled kernel really takes the blocked path."""

from __future__ import annotations

import shutil

import pytest
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose

from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.registry import get_task

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")

# rows of 2500 in chunks of 1024: two full chunks (16 segments of 64) and a ragged tail of 452
# (8 segments, 60 padded lanes)
CHUNKS = {"CHUNK": 1024, "CORES": 4}


def _blocked(task, kind: str = "blocked"):
    return next(c for c in propose(task) if c.name.endswith("/" + kind))


def _check(task, params: dict, kind: str = "blocked"):
    ev = Evaluator(task, "Ascend910B2", seeds=(0,), shape_sets=[list(task.shapes)])
    cand = _blocked(task, kind)
    return ev.evaluate(prepare(cand.name, cand.source), params, timing=False)


_SLOW = pytest.mark.slow


@needs_gxx
@pytest.mark.parametrize("name,dtype", [
    ("cumsum", "fp32"), ("cumprod", "fp32"), ("logcumsumexp", "fp32"),
    ("cumsum_exclusive", "fp16"), ("cumsum_reverse", "fp16"), ("masked_cumsum", "fp16"),
    # the other dtype of each: in the slow sweep
    *(pytest.param(n, d, marks=_SLOW) for n, d in [
        ("cumsum", "fp16"), ("cumprod", "fp16"), ("logcumsumexp", "fp16"),
        ("cumsum_exclusive", "fp32"), ("cumsum_reverse", "fp32"), ("masked_cumsum", "fp32")]),
])
def test_blocked_scan_is_correct_across_chunks(name: str, dtype: str) -> None:
    out = _check(get_task(name).with_shape((6, 2500), dtype), CHUNKS)
    assert out.status is Status.OK, out.message


@needs_gxx
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_one_read_logcumsumexp_rescales_its_carry_per_chunk(dtype: str) -> None:
    out = _check(get_task("logcumsumexp").with_shape((6, 2500), dtype), CHUNKS, "online")
    assert out.status is Status.OK, out.message


@needs_gxx
def test_a_tail_narrower_than_the_lanes_falls_back_to_hillis_steele() -> None:
    # rows of 1050: a chunk of 1024 (blocked), then a tail of 26 < 64 lanes (Hillis-Steele)
    out = _check(get_task("cumsum").with_shape((5, 1050), "fp32"), CHUNKS)
    assert out.status is Status.OK, out.message


@needs_gxx
def test_the_blocked_path_is_the_one_modeled() -> None:
    # Hillis-Steele costs log2(4096) = 12 steps of Gather + Select + Add per element; had the
    # blocked kernel fallen back to it, both would model alike
    task = get_task("cumsum").with_shape((16, 4096), "fp32")  # one core: vector time dominates
    ev = Evaluator(task, "Ascend910B2", seeds=(0,))
    us = {}
    for c in propose(task):
        kind = c.name.rsplit("/", 1)[1]
        if kind in ("chunked", "blocked"):
            prep = prepare(c.name, c.source)
            us[kind] = ev.time(ev.build(prep, {"CHUNK": 4096, "CORES": 1}))["modeled_us"]
    assert us["blocked"] < 0.5 * us["chunked"], us


@pytest.mark.parametrize("lanes", ["63", "32", "2048", "L"])
def test_scan_lanes_must_be_a_listed_literal(lanes: str) -> None:
    src = _blocked(get_task("cumsum")).source
    parse(src)
    bad = src.replace(", carry, 64)", f", carry, {lanes})")
    assert bad != src
    with pytest.raises(DslError, match="lanes|compile-time integer"):
        parse(bad)


def test_the_scan_tables_are_built_only_when_the_chunk_width_changes() -> None:
    # the Gather tables depend on w alone: built under a width guard (once per kernel when every
    # chunk is full), and invalidated where the Hillis-Steele fallback uses their buffers as scratch
    from ascendcraft.dsl.kernel import prepare as dsl_prepare

    cand = _blocked(get_task("cumsum"))
    body = dsl_prepare(cand.name, cand.source).lower({}).launches[0].source
    guard = body.index("if (w != scanW")
    assert body.index("CreateVecIndex", guard) > guard
    assert body.count("int64_t scanW") == 1 and "= -1;  // the tables' buffers are scratch here" in body


def test_tables_rebuilt_per_chunk_is_offered_beside_and_has_no_width_guard() -> None:
    # scan_*(v, carry, lanes, 0): the tables built in every chunk, their buffers back in the
    # pool (the model ranks the two forms differently per op, so the search is given both)
    from ascendcraft.dsl.kernel import prepare as dsl_prepare

    names = {c.name.rsplit("/", 1)[1] for c in propose(get_task("logcumsumexp"))}
    assert {"online", "online_chunk_tables", "blocked", "blocked_chunk_tables"} <= names
    cand = _blocked(get_task("cumsum"), "blocked_chunk_tables")
    assert ", carry, 64, 0)" in cand.source
    body = dsl_prepare(cand.name, cand.source).lower({}).launches[0].source
    assert "scanW" not in body and "CreateVecIndex" in body


@pytest.mark.parametrize("flag", ["2", "-1", "T"])
def test_scan_tables_flag_is_zero_or_one(flag: str) -> None:
    src = _blocked(get_task("cumsum")).source.replace(", carry, 64)", f", carry, 64, {flag})")
    with pytest.raises(DslError, match="tables_once|compile-time integer"):
        parse(src)


@needs_gxx
@pytest.mark.parametrize("name,dtype,kind", [
    ("logcumsumexp", "fp32", "online_chunk_tables"), ("logcumsumexp", "fp16", "online_chunk_tables"),
    ("cumsum_reverse", "fp16", "reverse_blocked_chunk_tables"), ("cumsum", "fp32", "blocked_chunk_tables")])
def test_tables_rebuilt_per_chunk_are_correct_across_chunks(name: str, dtype: str, kind: str) -> None:
    out = _check(get_task(name).with_shape((6, 2500), dtype), CHUNKS, kind)
    assert out.status is Status.OK, out.message
