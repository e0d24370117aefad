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
