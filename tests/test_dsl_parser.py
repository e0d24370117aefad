"""The DSL is parsed, never executed: forbidden constructs are rejected with line numbers."""

from __future__ import annotations

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.lowering.kernel import check_budget
from ascendcraft.dsl.parser import DslError, parse

HEADER = "@kernel\ndef k(x: In[f32], y: Out[f32]):\n    for t in tiles(x, tile=256):\n"

HOSTILE = {
    "import": ("import os\n" + HEADER + "        store(y, t, load(x, t))\n", 1),
    "from-import": (HEADER + "        from os import system\n", 4),
    "open": (HEADER + "        a = open(1)\n", 4),
    "eval": (HEADER + "        a = eval(1)\n", 4),
    "exec": (HEADER + "        a = exec(1)\n", 4),
    "dunder-class": (HEADER + "        a = x.__class__\n", 4),
    "dunder-globals": (HEADER + "        a = __globals__\n", 4),
    "dunder-import": (HEADER + "        a = __import__(1)\n", 4),
    "unknown-function": (HEADER + "        a = frobnicate(load(x, t))\n", 4),
    "lambda": (HEADER + "        a = (lambda q: q)(1)\n", 4),
    "comprehension": (HEADER + "        a = [q for q in range(3)]\n", 4),
    "while": (HEADER + "        while 1:\n            pass\n", 4),
    "attribute": (HEADER + "        a = load(x, t).sum()\n", 4),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_is_rejected_with_its_line(name: str, monkeypatch) -> None:
    import builtins

    def boom(*a, **k):  # pragma: no cover - reaching it is the failure
        raise AssertionError("the DSL text was executed")

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(builtins, "exec", boom)
    src, line = HOSTILE[name]
    with pytest.raises(DslError) as err:
        check_program(parse(src))
    assert err.value.loc is not None and err.value.loc.line == line, str(err.value)
    assert f"line {line}" in str(err.value)


def test_syntax_error_names_line() -> None:
    with pytest.raises(DslError, match="line 4"):
        parse(HEADER + "        a = (\n")


def test_type_errors_name_line() -> None:
    src = ("@kernel\ndef k(x: In[f16], y: Out[f32]):\n    for t in tiles(x, tile=256):\n"
           "        store(y, t, load(x, t))\n")
    with pytest.raises(DslError, match="line 4.*cast"):
        check_program(parse(src))
    src = ("@kernel\ndef k(x: In[bf16], y: Out[bf16]):\n    for t in tiles(x, tile=256):\n"
           "        store(y, t, exp(load(x, t)))\n")
    with pytest.raises(DslError, match="bf16"):
        check_program(parse(src))


ROWS = """@kernel(category="activation")
def softmax(x: In[f32], y: Out[f32]):
    ROWS = tunable(pow2(1, 64), default=4)
    for t in rows(x, rows=ROWS):
        a = load(x, t)
        e = exp(a - row_max(a))
        store(y, t, e / row_sum(e))
"""


def test_ub_budget_is_checked_before_build_with_numbers() -> None:
    tp = check_program(parse(ROWS))
    ok = check_budget(tp, [[64, 1024], [64, 1024]], {"ROWS": 4}, 48, 188416)
    assert ok["ubBytes"] <= 188416
    with pytest.raises(DslError) as err:
        check_budget(tp, [[64, 65535], [64, 65535]], {"ROWS": 4}, 48, 188416)
    msg = str(err.value)
    assert "UB budget exceeded: needs" in msg and "188416 B available" in msg


def test_tunables_and_domains() -> None:
    p = parse(ROWS)
    assert p.tunable("ROWS").domain.values() == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(DslError, match="not in the domain"):
        parse(ROWS.replace("default=4", "default=3"))


K2 = "@kernel\ndef k(x: In[f32], y: Out[f32]):\n"
LOOP = "    for t in tiles(x, tile=256):\n"

MISUSE = {
    # total_* must be a whole assignment in a loop, of an f32 tile (tiles loop)
    "total-inside-expr": (K2 + LOOP + "        a = load(x, t) + total_sum(load(x, t))\n"
                          "    store(y, a)\n", "whole assignment"),
    "total-used-in-loop": (K2 + LOOP + "        s = total_sum(load(x, t))\n"
                           "        store(y, t, load(x, t) * s)\n", "not defined here"),
    "total-of-row-in-tiles": (K2 + "    for t in rows(x, rows=1):\n        s = total_sum(load(x, t))\n"
                              "    store(y, s)\n", "takes a row value"),
    # scalar stores and top-level statements
    "tile-outside-loop": (K2 + LOOP + "        s = total_sum(load(x, t))\n    a = load(x, t)\n"
                          "    store(y, s)\n", "loop variable"),
    "scalar-store-before-loop": (K2 + "    store(y, 1.0)\n" + LOOP + "        store(y, t, load(x, t))\n",
                                 "after a distribution loop"),
    "loop-headers-differ": (K2 + LOOP + "        s = total_sum(load(x, t))\n"
                            "    for t in tiles(x, tile=512):\n        store(y, t, load(x, t) * s)\n",
                            "same header"),
    # pow on kernel-side scalars, scans outside rows, windows arguments, pick dtypes
    "kernel-scalar-pow": (K2 + LOOP + "        s = total_sum(load(x, t))\n    q = s ** s\n"
                          "    store(y, q)\n", "host scalars"),
    "scan-in-tiles": (K2 + LOOP + "        store(y, t, scan_sum(load(x, t), load(x, t)))\n", "rows"),
    "windows-padding": (K2 + "    for t in windows(x, dims=2, kernel=2, stride=1, padding=2, rows=1, chunk=64):\n"
                        "        store(y, t, tile_fill(0.0))\n", "padding"),
    "windows-load-at-t": (K2 + "    for t in windows(x, dims=2, kernel=3, stride=1, rows=1, chunk=64):\n"
                          "        store(y, t, load(x, t))\n", "per tap"),
    "pick-float-index": ("@kernel\ndef k(x: In[f32], i: In[f32], y: Out[f32]):\n"
                         "    for t in rows(x, rows=1):\n        store(y, t, pick(x, t, i))\n", "i32 or i64"),
    "axis-rows-unchunked": (K2 + "    for t in rows(x, rows=1, axis=1):\n        store(y, t, load(x, t))\n",
                            "chunks"),
}


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_new_constructs_reject_misuse_with_a_reason(name: str) -> None:
    src, words = MISUSE[name]
    with pytest.raises(DslError, match=words):
        check_program(parse(src))


def test_two_loops_share_one_tiling_and_combine_a_grid_value() -> None:
    """A global reduction, a kernel-side scalar, then a second pass: the lowering emits the
    per-core partial, the workspace slot, SyncAll and the combine before the second loop."""
    from ascendcraft.dsl.lowering.kernel import lower

    src = (K2 + "    TILE = tunable(pow2(256, 4096), default=1024)\n"
           "    for t in tiles(x, tile=TILE):\n        a = load(x, t)\n        ss = total_sum(a * a)\n"
           "    inv = 1.0 / sqrt(ss)\n"
           "    for t in tiles(x, tile=TILE):\n        store(y, t, load(x, t) * inv)\n")
    lk = lower(src)
    body = lk.kernel_class[lk.kernel_class.index("void Process"):]
    assert body.index("ReduceSum") < body.index("SyncAll()") < body.index("AcxScalarFn") \
        < body.rindex("CopyRowsOut")
    assert lk.tiling.grid_loops == 1 and "workspaceBytes = 1 * blockDim * 32" in lk.tiling_header


def test_host_scalars_are_computed_by_the_tiling() -> None:
    from ascendcraft.dsl.lowering.kernel import lower

    src = ("@kernel\ndef k(x: In[f32], step: Scalar[f32], y: Out[f32]):\n"
           "    bc = 1.0 - 0.9 ** step\n"
           "    for t in tiles(x, tile=256):\n        store(y, t, load(x, t) / bc + numel(x))\n")
    lk = lower(src)
    assert "__builtin_pow(0.9, static_cast<double>(sc_step))" in lk.tiling_header
    assert "td_.h_bc" in lk.kernel_class and "nel_x" in lk.tiling_header
