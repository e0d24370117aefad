"""Reading candidates out of an answer, and screening what an answer may not do: imports,
dunders, attribute access, C++ in names or the category, paths in names."""

from __future__ import annotations

import json

import pytest
from ascendcraft.search.llm.extract import MAX_DRAFTS, extract
from ascendcraft.search.llm.screen import printable, safe_name, unsafe_reason

GOOD = '''@kernel(category="activation")
def relu(x: In[f32], out: Out[f32]):
    TILE = tunable(pow2(256, 16384), default=4096)
    for t in tiles(x, tile=TILE):
        store(out, t, maximum(load(x, t), 0.0))
'''


def answer(**item) -> str:
    base = {"name": "tiles", "structure": "flat tiles", "dsl": GOOD,
            "tiling": [{"tunable": "TILE", "value": 8192, "reason": "fits twice"}]}
    base.update(item)
    return json.dumps({"candidates": [base]})


def test_json_bare_in_a_fence_or_inside_prose() -> None:
    for text in (answer(), f"```json\n{answer()}\n```", f"Sure! Here it is:\n{answer()}\nEnjoy."):
        ex = extract(text)
        assert ex.form == "json" and len(ex.drafts) == 1, text[:40]
        d = ex.drafts[0]
        assert d.dsl == GOOD and d.name == "tiles"
        assert [(h.tunable, h.value, h.reason) for h in d.tiling] == [("TILE", 8192, "fits twice")]


def test_fenced_programs_without_json_are_read_without_tiling() -> None:
    text = f"Two kernels:\n```python\n{GOOD}```\nand\n```\n{GOOD.replace('relu', 'relu2')}```\n"
    ex = extract(text)
    assert ex.form == "fenced" and [d.name for d in ex.drafts] == ["c1", "c2"]
    assert all(d.tiling == () for d in ex.drafts)
    assert "relu2" in ex.drafts[1].dsl


def test_a_program_fenced_inside_the_json_string_is_unwrapped() -> None:
    ex = extract(answer(dsl=f"```python\n{GOOD}```"))
    assert ex.drafts[0].dsl == GOOD


@pytest.mark.parametrize("text", ["", "   ", "I cannot help with that.", "{not json",
                                  '{"candidates": "nope"}', '[1, 2, 3]', "```\nprint(1)\n```",
                                  '{"candidates": [{"name": "x"}]}', "\x00\x01\x02" * 100])
def test_garbage_holds_no_draft_and_says_why(text: str) -> None:
    ex = extract(text)
    assert ex.drafts == [] and ex.problems


def test_bad_fields_are_problems_not_exceptions() -> None:
    ex = extract(answer(name=7, structure=None, tiling=[{"tunable": "TILE", "value": "big"},
                                                         {"tunable": "TILE", "value": True}, 3]))
    d = ex.drafts[0]
    assert d.name == "c1" and d.structure == "" and d.tiling == ()
    assert len(ex.problems) == 3
    many = json.dumps({"candidates": [{"name": f"k{i}", "dsl": GOOD} for i in range(30)]})
    ex = extract(many)
    assert len(ex.drafts) == MAX_DRAFTS and any("first" in p for p in ex.problems)


def test_tiling_as_a_plain_mapping_is_accepted() -> None:
    d = extract(answer(tiling={"TILE": 2048.0})).drafts[0]
    assert [(h.tunable, h.value) for h in d.tiling] == [("TILE", 2048)]


MALICIOUS = {
    "import": "import os\n" + GOOD,
    "import inside": GOOD.replace("    TILE =", "    from os import system\n    TILE ="),
    "dunder": GOOD.replace("0.0))", "__import__('os')))"),
    "attribute": GOOD.replace("maximum(load(x, t), 0.0)", "x.__class__"),
    "plain attribute": GOOD.replace("maximum(load(x, t), 0.0)", "os.system('rm -rf /')"),
    "eval": GOOD.replace("maximum(load(x, t), 0.0)", "eval('1')"),
    "c++ in category": GOOD.replace('"activation"', '"act\\"); system(\\"id\\"); //"'),
    "category newline": GOOD.replace('"activation"', '"a\\n#include <cstdlib>"'),
    "c++ in kernel name": GOOD.replace("def relu(", "def relu__asm(").replace("relu__asm", "r;system"),
    "c++ in parameter name": GOOD.replace("out: Out[f32]", "_out: Out[f32]").replace(
        "store(out,", "store(_out,"),
    "non-ascii name": GOOD.replace("def relu(", "def relü("),
}


@pytest.mark.parametrize("kind", sorted(MALICIOUS))
def test_programs_reaching_outside_the_dsl_are_unsafe(kind: str) -> None:
    why = unsafe_reason(MALICIOUS[kind])
    # "c++ in kernel name" is not valid Python, so no screen can read it: it is an ordinary
    # syntax error for the DSL parser (and never reaches C++)
    if kind == "c++ in kernel name":
        assert why is None
        return
    assert why, kind
    assert "\n" not in why and "\x1b" not in why


def test_a_clean_program_is_not_unsafe() -> None:
    assert unsafe_reason(GOOD) is None


@pytest.mark.parametrize("raw", ["../../etc/passwd", "/abs/path", "a b\tc", "\x1b[31mred",
                                 "CON", "x" * 300, "...", "名前", "rows;rm -rf ~"])
def test_names_from_an_answer_cannot_form_paths(raw: str) -> None:
    name = safe_name(raw)
    assert name and len(name) <= 40
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-")
    assert not name.startswith(("-", "_"))


def test_printable_strips_control_sequences() -> None:
    assert printable("a\x1b[2Jb\nc\rd", 100) == "a [2Jb c d"
    assert len(printable("x" * 500, 50)) == 50
