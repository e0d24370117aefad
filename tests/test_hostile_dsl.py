"""Hostile or careless DSL (issue 10): each case ends as one readable DslError (or a small,
correct kernel), never a traceback, a hang or an exploding build; through the library and
through ``ascendcraft check --dsl FILE``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.lowering.cube import lower_cube
from ascendcraft.dsl.lowering.kernel import check_budget, lower
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose

from ascendcraft.cli import main as cli_main
from ascendcraft.evaluate import prepare
from ascendcraft.tasks.registry import get_task


def program(body: str, *, name: str = "k", params: str = "x: In[f32], y: Out[f32]", prelude: str = "") -> str:
    """A tiles kernel storing ``body`` (an expression of ``a = load(x, t)``)."""
    return (f'@kernel(category="activation")\ndef {name}({params}):\n{prelude}'
            "    for t in tiles(x, tile=1024):\n        a = load(x, t)\n"
            f"        store(y, t, {body})\n")


def nested_pow(levels: int, var: str = "a") -> str:
    return "(" * levels + var + ") ** 4" * levels


def one_line_error(source: str, match: str) -> str:
    """prepare() (parse + check, what `check` runs first) raises one short DslError line."""
    t0 = time.perf_counter()
    with pytest.raises(DslError, match=match) as e:
        prepare("hostile", source)
    assert time.perf_counter() - t0 < 20
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


# a cube program with a vector stage (the candidate whose epilogue reads the split-K workspace)
CUBE = next(c.source for c in propose(get_task("matmul_bias_relu")) if "load(acc_ws, cc)" in c.source)


@pytest.mark.parametrize("source", [
    program("a", name="café"),
    program("a", params="x: In[f32], ÿ: Out[f32]").replace("store(y", "store(ÿ"),
    program("é", prelude="").replace("a = load", "é = load"),
    program("a", prelude="    ТILE = tunable(pow2(256, 4096))\n"),
])
def test_unicode_identifiers(source: str) -> None:
    one_line_error(source, "ASCII")


def test_long_kernel_name() -> None:
    msg = one_line_error(program("a", name="k" * 3000), "3000 characters; the limit is 64")
    assert len(msg) < 200


@pytest.mark.parametrize("expr, match", [
    ("a * 10 ** 400", "not a finite real number"),
    ("a * 1" + "0" * 400, "out of the float range"),
    ("a * 1" + "0" * 5000, "syntax error|out of the float range"),
    ("a * (-8.0) ** 0.5", "not a finite real number"),
    ("a * (0.0 / 0.0)", "division by the constant 0"),
    ("a / 0.0", "division by the constant 0|by zero"),
    ("a * log(-1.0)", "not a finite real number"),
    ("a * (inf - inf)", "not a finite real number"),
    ("a * exp(1000.0)", "not a finite real number"),
    ("-" * 30000 + "a", "nests too deeply"),
    ("(" * 5000 + "a" + ")" * 5000, "nests too deeply|syntax error"),
    ("a * 'text'", "numeric constants"),
])
def test_literals_and_depth(expr: str, match: str) -> None:
    one_line_error(program(expr), match)


EPILOGUE = "            v = load(acc_ws, cc)\n"


def cube_with(expr: str) -> str:
    """The cube program with its epilogue value replaced by ``expr`` (of ``v``)."""
    assert EPILOGUE in CUBE
    return CUBE.replace(EPILOGUE, EPILOGUE + f"            v = {expr}\n")


@pytest.mark.parametrize("expr, match", [
    ("v * (0.0 / 0.0)", "division by the constant 0"),
    # one expression language: constant powers fold (and must be finite) as in vector kernels
    ("v * (-8.0) ** 0.5", "pow\\(-8, 0.5\\) is not a finite real number"),
    ("v * (-8.0) ** 2 * 1" + "0" * 400, "out of the float range"),
    ("v * 10 ** 400", "pow\\(10, 400\\) is not a finite real number"),
    ("-" * 30000 + "v", "nests too deeply"),
])
def test_cube_literals_and_depth(expr: str, match: str) -> None:
    with pytest.raises(DslError, match=match) as e:
        parse(cube_with(expr))
    assert "\n" not in str(e.value)


def test_size_dim_out_of_range() -> None:
    src = program("a * s", prelude="")
    src = src.replace("    for t in tiles", "    s = size(x, 100000000000000000000)\n    for t in tiles")
    one_line_error(src, r"size\(x, d\)|out of range|a dim is in")
    ok = program("a * s").replace("    for t in tiles", "    s = size(x, 5)\n    for t in tiles")
    tp = check_program(parse(ok))
    with pytest.raises(DslError, match="'x' has rank 2"):
        check_budget(tp, [[64, 1024], [64, 1024]], {}, 48, 188416)


def test_tunable_named_like_a_builtin() -> None:
    src = program("a", prelude="    max = tunable(pow2(256, 4096), default=1024)\n").replace("tile=1024", "tile=max")
    tp = check_program(parse(src))
    t = check_budget(tp, [[1 << 20], [1 << 20]], {"max": 512}, 48, 188416)
    assert t["tileLen"] == 512
    assert "tun_max" in lower(src).tiling_header


@pytest.mark.parametrize("levels", [8, 10, 40])
def test_nested_power_is_a_small_kernel(levels: int) -> None:
    t0 = time.perf_counter()
    lk = lower(program(nested_pow(levels)))
    src = lk.emulator_source()
    assert time.perf_counter() - t0 < 20
    glue = lower(program("a")).emulator_source().count("Mul(")  # the prelude's own helpers
    assert src.count("Mul(") - glue == 2 * levels  # x ** 4 is two multiplies of one value
    assert len(src) < 100_000, len(src)


def test_nested_power_scalars_and_cube_stay_small() -> None:
    host = program("a * h", params="x: In[f32], g: Scalar[f32], y: Out[f32]",
                   prelude=f"    h = {nested_pow(30, 'g')}\n")
    assert len(lower(host).tiling_header) < 20_000
    t0 = time.perf_counter()
    lk = lower_cube(cube_with(nested_pow(30, "v")))
    assert time.perf_counter() - t0 < 20
    glue = lower_cube(cube_with("v")).vector_class.count("Mul(")  # the prelude's own helpers
    assert lk.vector_class.count("Mul(") - glue == 2 * 30
    assert len(lk.vector_class) < 200_000


@pytest.mark.parametrize("domain", ["span(1, 1000000000000, 1)", "span(1, 2000000000, 1)",
                                    "pow2(1, 100000000000000000000)",
                                    "span(1, 4097, 1)", "choice(" + ", ".join(map(str, range(1, 5000))) + ")"])
def test_huge_domains_are_refused_at_once(domain: str) -> None:
    t0 = time.perf_counter()
    one_line_error(program("a", prelude=f"    T = tunable({domain})\n"), "values|out of range|limit")
    assert time.perf_counter() - t0 < 5


def test_cube_huge_domain_and_unroll_bombs() -> None:
    big = CUBE.replace("tunable(choice(64, 128, 256)", "tunable(span(1, 2000000000, 1)", 1)
    assert big != CUBE
    t0 = time.perf_counter()
    with pytest.raises(DslError, match="values"):
        parse(big)
    bomb = ('@cube_kernel(category="matmul")\ndef k(x: In[f32], y: Out[f32]):\n'
            "    for t in rows(x, rows=4):\n"
            "        for i in unroll(64):\n            for j in unroll(64):\n                for l in unroll(64):\n"
            "                    for m in unroll(64):\n                        pass\n")
    with pytest.raises(DslError, match="statements"):
        parse(bomb)
    assert time.perf_counter() - t0 < 20


def test_instruction_budget() -> None:
    lines = "".join(f"        a{i + 1} = erf(a{i})\n" for i in range(2500))
    src = program("a2500", prelude="").replace("a = load(x, t)\n", "a0 = load(x, t)\n" + lines)
    assert len(src.encode()) < 64 * 1024
    one_line_error(src, "budget is 20000")


def test_source_size_limit() -> None:
    one_line_error(program("a") + "#" * 70_000 + "\n", "bytes; the limit is 65536")


# ---------------------------------------------------------------- the CLI path


def run_check(tmp_path: Path, content: bytes, capsys=None) -> tuple[int, str]:
    """``ascendcraft check --op relu --dsl FILE --no-timing``: in-process through cli.main
    (an uncaught exception fails the test) or, without ``capsys``, as a real subprocess."""
    f = tmp_path / "prog.dsl"
    f.write_bytes(content)
    argv = ["check", "--op", "relu", "--dsl", str(f), "--no-timing"]
    if capsys is not None:
        rc = cli_main(argv)
        out = capsys.readouterr()
        return rc, out.out + out.err
    r = subprocess.run([sys.executable, "-m", "ascendcraft.cli", *argv], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("content, words", [
    (program("a", name="café").encode(), "ASCII"),
    (program("-" * 30000 + "a").encode(), "nests too deeply"),
    (program("a", prelude="    T = tunable(span(1, 1000000000000, 1))\n").encode(), "out of range"),
    (program("a", prelude="    T = tunable(span(1, 2000000000, 1))\n").encode(), "2000000000 values"),
    (program("a", name="k" * 3000).encode(), "limit is 64"),
])
def test_cli_check_reports_without_traceback(tmp_path: Path, capsys, content: bytes, words: str) -> None:
    t0 = time.perf_counter()
    rc, out = run_check(tmp_path, content, capsys)
    assert rc != 0
    assert "Traceback" not in out
    assert words in out, out[-2000:]
    assert time.perf_counter() - t0 < 60


def test_cli_check_non_utf8_file_in_a_real_process(tmp_path: Path) -> None:
    rc, out = run_check(tmp_path, b"@kernel\ndef k(x: In[f32], y: Out[f32]):\n    \xff\xfe = 1\n")
    assert rc != 0 and "Traceback" not in out
    assert "not UTF-8" in out and len(out.strip().splitlines()) == 1, out


def test_cli_check_nested_power_builds_a_small_kernel(tmp_path: Path, capsys) -> None:
    rc, out = run_check(tmp_path, program(f"minimum(maximum({nested_pow(8)}, 0.0), 0.0) + maximum(a, 0.0)").encode(),
                        capsys)
    assert rc == 0 and "Traceback" not in out
    assert "PASS" in out, out


def test_cli_check_marks_a_candidate_nothing_fits_as_skipped(tmp_path: Path, capsys) -> None:
    """A program whose only tile size is too large for UB is never run: SKIP with the budget it
    needs, not FAIL (no kernel was wrong), and the check fails for want of a passing candidate."""
    src = ('@kernel(category="activation")\ndef k(x: In[f32], y: Out[f32]):\n'
           "    T = tunable(choice(1048576), default=1048576)\n"
           "    for t in tiles(x, tile=T):\n        store(y, t, load(x, t) + 1.0)\n")
    rc, out = run_check(tmp_path, src.encode(), capsys)
    assert rc == 1 and "Traceback" not in out
    assert "  SKIP prog/file" in out and "[infeasible]" in out and "UB budget" in out and "  FAIL prog" not in out, out
