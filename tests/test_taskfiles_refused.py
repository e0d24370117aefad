"""Task files no kernel can serve (tests/taskfiles/refused/) end as one readable paragraph.

A file that raises (at import, in ``__init__``, ``forward`` or ``get_inputs``), returns nothing,
a string, a dict or a Python number, has an empty or complex tensor, an empty output, a float64
or integer-only computation, or a non-deterministic forward (dropout in training mode,
``torch.rand_like`` inside): ``ascendcraft check --task FILE`` exits 2 with one line on stderr
that names the file or the ATen op, and never a traceback. ``check --tasks DIR`` reports each
such file as refused and goes on with the next.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ascendcraft.cli import main

HERE = Path(__file__).parent / "taskfiles"
REFUSED = sorted((HERE / "refused").glob("*.py"))


@pytest.mark.parametrize("path", REFUSED, ids=[p.stem for p in REFUSED])
def test_refused_file_ends_in_one_paragraph(path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", "--no-timing", "--task", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ascendcraft check: "), err
    assert "Traceback" not in err + out and "internal error" not in err
    assert len(lines[0]) > 60  # a reason, not a bare word


def test_a_syntax_error_ends_in_one_paragraph(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """(Written here: a stored file with a syntax error would break the linter.)"""
    bad = tmp_path / "syntax_error.py"
    bad.write_text("import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x)\n"
                   "        return x\n")
    assert main(["check", "--task", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "syntax_error.py:5: syntax error" in err and len(err.strip().splitlines()) == 1


def test_the_refused_set_covers_each_class() -> None:
    names = {p.stem for p in REFUSED}
    for want in ("forward_raises", "init_raises", "get_inputs_raises", "no_model",
                 "returns_none", "returns_string", "returns_dict", "returns_python_float",
                 "zero_size_input", "empty_output", "complex_input", "float64_input",
                 "dropout_train", "rand_inside", "int_output_only", "forward_raises_on_values",
                 "gather_embedding_bag_mean"):
        assert want in names


def test_check_tasks_goes_through_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for name in ("returns_none", "forward_raises"):
        shutil.copy(HERE / "refused" / f"{name}.py", tmp_path)
    shutil.copy(HERE / "wild" / "prime_gelu.py", tmp_path)
    (tmp_path / "notes.txt").write_text("not a task file")
    rc = main(["check", "--no-timing", "--tasks", str(tmp_path)])
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert rc == 1 and not err
    assert [ln.split()[:2] for ln in lines[:3]] == [
        ["REFUSED", "forward_raises.py"], ["PASS", "prime_gelu.py"], ["REFUSED", "returns_none.py"]]
    assert lines[3] == "3 task files: 1 pass, 0 fail, 2 refused, 0 error"


def test_check_tasks_refuses_what_is_not_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["check", "--tasks", str(tmp_path / "missing")]) == 2
    assert main(["check", "--tasks", str(tmp_path)]) == 2  # no *.py in it
    err = capsys.readouterr().err
    assert "not a directory" in err and "no task files" in err


def test_a_tensor_made_in_forward_without_device_traces(capsys: pytest.CaptureFixture) -> None:
    """torch.ones(t, t).tril() in forward (no device=) is made on meta beside the meta inputs: the
    file loads, traces and passes (tril is a comparison of indices), with no device-mix error."""
    rc = main(["check", "--no-timing", "--task", str(HERE / "corpus" / "causal_mask_made_in_forward.py")])
    out, err = capsys.readouterr()
    assert rc == 0 and "PASS" in out and "does not run on meta" not in out + err, out + err
