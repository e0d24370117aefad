"""Hostile and careless command lines: every user-caused error is one paragraph on stderr and
exit code 2 (never a traceback), values that used to be silently accepted are refused, a bug
is exit code 3 with its traceback in a file, and SIGINT during ``tune`` keeps a partial
summary that ``--resume`` completes.

Most cases call ``cli.main`` in this process with captured output (what the console script
runs); the signal and resume cases run the real command in a subprocess. The hostile DSL
programs of the same issue (unicode identifiers, ``10**400``, deep nesting, huge spans, ...)
are in ``test_hostile_dsl.py``, code injection in ``test_security.py``, the emulator's
confinement (SIGKILL mid-timing, trace caps) in ``test_emulator_confine.py``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from ascendcraft import cli
from ascendcraft.tasks import compare

SMALL = ("--op", "relu", "--shape", "64x64")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``ascendcraft ARGV`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:  # argparse exits (with our one-paragraph message)
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_paragraph(err: str, *needles: str) -> str:
    """The message is one line (no blank line, no traceback) and names what it should."""
    text = err.strip()
    assert text, "no message on stderr"
    assert "Traceback" not in err and 'File "' not in err, err
    assert len(text.splitlines()) == 1, err
    for n in needles:
        assert n in text, f"{n!r} not in {text!r}"
    return text


def refused(capsys, needles: tuple[str, ...], *argv: str) -> str:
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (rc, out, err)
    return one_paragraph(err, *needles)


def write_task(path: Path, body: str) -> Path:
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    f"    def forward(self, x):\n        return {body}\n\n"
                    "def get_inputs():\n    return [torch.randn(64, 256)]\n")
    return path


# ---------------------------------------------------------------- numeric flags
@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (("tune", *SMALL, "--budget", "0"), ("--budget", "at least 1", "got 0")),
        (("tune", *SMALL, "--budget", "-5"), ("--budget", "got -5")),
        (("tune", *SMALL, "--budget", "many"), ("--budget", "expected an integer")),
        (("tune", *SMALL, "--workers", "0"), ("--workers", "at least 1", "got 0")),  # was accepted
        (("tune", *SMALL, "--timeout-per-trial", "-5"), ("--timeout-per-trial", "> 0")),  # was accepted
        (("tune", *SMALL, "--timeout-per-trial", "0"), ("--timeout-per-trial", "> 0")),
        (("tune", *SMALL, "--timeout-per-trial", "nan"), ("--timeout-per-trial", "finite")),
        (("tune", *SMALL, "--seed", "-1"), ("--seed", "got -1")),  # was a numpy traceback
        (("tune", *SMALL, "--seed", str(2**32)), ("--seed", "4294967295")),
        (("lower", "--op", "relu", "--candidate", "-1", "--out", "x"), ("--candidate", "at least 0")),
        (("tune", *SMALL, "--no-such-flag"), ("unrecognized arguments", "--no-such-flag")),
        (("check",), ()),  # no --op/--task: a user error too
        (("check", "--op", "relu", "--shape", "x"), ("Cannot parse shape 'x'",)),  # was a 0-d task
        (("check", "--op", "relu", "--shape", "64x"), ("Cannot parse shape",)),
        (("tune", *SMALL, "--out", ""), ("--out is empty",)),  # was the default run directory
    ],
)
def test_bad_flag_values_are_refused(capsys, argv, needles):
    refused(capsys, needles, *argv)


def test_candidate_out_of_range(capsys, tmp_path):
    refused(capsys, ("relu", "--candidate takes 0 to 0, not 5"),
            "lower", "--op", "relu", "--candidate", "5", "--out", str(tmp_path / "l"))


def test_unknown_soc_lists_the_known_ones(capsys, tmp_path):
    from ascendcraft.soc import list_socs

    for cmd in (("check", "--op", "relu"), ("tune", *SMALL, "--out", str(tmp_path / "r"))):
        msg = refused(capsys, ("unknown SoC 'Ascend999'",), *cmd, "--soc", "Ascend999")
        assert all(s in msg for s in list_socs())
    assert not (tmp_path / "r").exists()  # refused before any work


def test_resume_needs_the_run_directory(capsys):
    refused(capsys, ("--resume needs --out",), "tune", *SMALL, "--resume")


# ---------------------------------------------------------------- shapes and tasks
def test_shape_beyond_device_memory_is_refused_not_attempted(capsys, tmp_path):
    """2^40 fp32 elements (4 TiB in, 4 TiB out) tried to allocate 4.4 TB; the 910B2 has 64 GiB."""
    for cmd in (("check", "--no-timing"), ("tune", "--budget", "2", "--out", str(tmp_path / "r")),
                ("lower", "--out", str(tmp_path / "l"))):
        refused(capsys, ("8 TiB", "64 GiB of HBM on Ascend910B2", "smaller --shape"),
                *cmd, "--op", "relu", "--shape", "1099511627776")
    assert not (tmp_path / "r").exists() and not (tmp_path / "l").exists()


def test_shape_overflowing_int64_is_refused(capsys):
    refused(capsys, ("int64",), "check", "--op", "relu", "--shape", "99999999999x99999999999")


def test_check_beyond_the_memory_ceiling_is_reduced_or_refused(capsys, monkeypatch):
    """--shape above the ceiling: checked at reduced shapes from it (timed at full), with a note;
    --full above it: refused. (The ceiling is lowered to 1 MiB so a 64 MiB shape exceeds it.)"""
    from ascendcraft.tasks import limits

    monkeypatch.setattr(limits, "memory_ceiling", lambda: 1 << 20)
    rc, out, err = run(capsys, "check", "--op", "relu", "--shape", "4096x4096", "--no-timing", "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert report["correct"] and "reduced shapes" in report["note"]
    assert [[4096, 4096]] not in report["shapes"] and report["timing_shapes"] == [[4096, 4096]]
    refused(capsys, ("--full", "ceiling of 1 MiB"), "check", "--op", "relu", "--shape", "4096x4096",
            "--full", "--no-timing")


def test_reduced_shapes_a_constructor_forces_past_the_ceiling_are_refused(capsys, monkeypatch, tmp_path):
    """A buffer sized by the constructor ([1, n]) fixes n for every correctness run (shapes rule 3,
    kept past the element budget). When that run needs more than the memory ceiling, check says
    so by name instead of being killed (a [3, 2^28] bf16 file took 23 GiB of RSS and the OOM
    killer); under the ceiling the same file is checked as before. (The ceiling is lowered to
    1 MiB so a 1 MiB row exceeds it.)"""
    from ascendcraft.tasks import limits

    f = tmp_path / "fixed_wide_buffer.py"
    f.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self, n):\n"
                 "        super().__init__()\n        self.register_buffer('b', torch.ones(1, n))\n\n"
                 "    def forward(self, x):\n        return x + self.b\n\n"
                 "def get_inputs():\n    return [torch.randn(2, 1 << 18)]\n\n"
                 "def get_init_inputs():\n    return [1 << 18]\n")
    rc, out, err = run(capsys, "check", "--task", str(f), "--no-timing")
    assert rc == 0, err
    monkeypatch.setattr(limits, "memory_ceiling", lambda: 1 << 20)
    refused(capsys, ("constructor fixes dims", "262144", "ceiling of 1 MiB", "get_init_inputs"),
            "check", "--task", str(f), "--no-timing")


@pytest.mark.parametrize(
    ("body", "what"),
    [('"hello"', "returned a str"), ("None", "returned None"),
     ('(x, "a")', "tuple of 2 items containing str"), ("(x, None)", "containing NoneType")],
)
def test_task_whose_forward_returns_no_tensor(capsys, tmp_path, body, what):
    f = write_task(tmp_path / "odd_task.py", body)
    refused(capsys, (str(f), what, "must return a tensor"), "check", "--task", str(f))


def test_all_nan_reference_fails_with_a_clear_figure(capsys, tmp_path):
    """A reference that is NaN everywhere matched an unwritten (NaN-filled) output and passed
    with max_abs_err=0; now the check fails and says why."""
    f = write_task(tmp_path / "nan_task.py", "torch.sqrt(-torch.abs(x) - 1.0)")
    rc, out, err = run(capsys, "check", "--task", str(f), "--no-timing", "--json")
    assert rc == 1, err
    report = json.loads(out)
    assert report["correct"] is False and report["max_abs_err"] is None
    (cand,) = report["candidates"]
    assert cand["status"] == "wrong" and "NaN everywhere" in cand["message"]


def test_nan_output_is_an_infinite_error_not_zero():
    r = compare(torch.full((64,), math.nan), torch.zeros(64))
    assert not r.ok and r.max_abs_err == math.inf and r.max_rel_err == math.inf
    assert "64 NaN where a finite value was expected" in r.message and "max_abs_err=inf" in r.message
    r = compare(torch.tensor([1.0, math.inf]), torch.tensor([1.0, 2.0]))
    assert not r.ok and r.max_abs_err == math.inf and "1 NaN/inf mismatches" in r.message


# ---------------------------------------------------------------- DSL files
BROKEN_DSL = "@kernel(category='activation')\ndef relu(x: Tensor[f32]) -> Tensor[f32]:\n    y = (\n"


def test_dsl_file_problems_are_user_errors(capsys, tmp_path):
    missing = str(tmp_path / "nope.dsl")
    for cmd in (("check", "--op", "relu"), ("lower", "--out", str(tmp_path / "l"))):
        refused(capsys, ("cannot read DSL file", "No such file"), *cmd, "--dsl", missing)
    broken = tmp_path / "broken.dsl"
    broken.write_text(BROKEN_DSL)
    for cmd in (("check", "--op", "relu"), ("lower", "--out", str(tmp_path / "l"))):
        refused(capsys, (str(broken), "line 3"), *cmd, "--dsl", str(broken))  # was FAIL, exit 1
    latin = tmp_path / "latin1.dsl"
    latin.write_bytes("# caf\xe9\n".encode("latin-1") + BROKEN_DSL.encode())
    for cmd in (("check", "--op", "relu"), ("lower", "--out", str(tmp_path / "l"))):
        refused(capsys, ("not UTF-8", "0xe9", "line 1"), *cmd, "--dsl", str(latin))
    big = tmp_path / "big.dsl"
    big.write_text("#" * (1 << 20))
    refused(capsys, ("at most",), "check", "--op", "relu", "--dsl", str(big))
    assert not (tmp_path / "l").exists()


@pytest.mark.parametrize(
    ("params", "needles"),
    [
        ("FOO=3", ("no tunable FOO", "TILE pow2(256, 16384)")),
        ("TILE=3", ("TILE=3 is outside the domain of TILE", "pow2(256, 16384)")),  # was accepted
        ("CORES=3", ("CORES=3 is outside",)),
        ("TILE", ("NAME=INT",)),
        ("TILE=big", ("NAME=INT",)),
        ("TILE=256,TILE=512", ("TILE twice",)),
    ],
)
def test_lower_params_are_checked_against_the_program(capsys, tmp_path, params, needles):
    refused(capsys, needles, "lower", "--op", "relu", "--params", params, "--out", str(tmp_path / "l"))
    assert not (tmp_path / "l").exists()


def test_lower_params_inside_the_domain_work(capsys, tmp_path):
    rc, out, err = run(capsys, "lower", "--op", "relu", "--params", "TILE=512,CORES=8",
                       "--out", str(tmp_path / "l"))
    assert rc == 0, err
    readme = (tmp_path / "l" / "README.md").read_text()
    assert "| `TILE` | 512 |" in readme and "| `CORES` | 8 |" in readme


def test_lower_out_is_a_file(capsys, tmp_path):
    f = tmp_path / "afile"
    f.write_text("")
    refused(capsys, ("--out", "not a directory"), "lower", "--op", "relu", "--out", str(f))
    refused(capsys, ("cannot write", "Not a directory"), "lower", "--op", "relu", "--out", str(f / "sub"))


# ---------------------------------------------------------------- tune: run dir, storage, resume
def test_out_is_a_file_or_unwritable(capsys, tmp_path):
    f = tmp_path / "afile"
    f.write_text("")
    refused(capsys, ("is not a directory",), "tune", *SMALL, "--budget", "2", "--workers", "1", "--out", str(f))
    refused(capsys, ("cannot use", "Not a directory"),
            "tune", *SMALL, "--budget", "2", "--workers", "1", "--out", str(f / "run"))
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        refused(capsys, ("cannot use", "Permission denied"),
                "tune", *SMALL, "--budget", "2", "--workers", "1", "--out", str(ro / "run"))


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        ("bogus://x", ("storage bogus://x", "not a usable database URL")),
        ("not a url", ("not a usable database URL",)),
        ("postgresql://user:secret@127.0.0.1:1/db", ("postgresql://***@127.0.0.1:1/db",)),
        ("sqlite://", ("in-memory SQLite database, which keeps nothing",)),  # was an internal error
    ],
)
def test_storage_that_cannot_be_used(capsys, tmp_path, url, needles):
    msg = refused(capsys, needles, "tune", *SMALL, "--budget", "2", "--workers", "1",
                  "--out", str(tmp_path / "r"), "--storage", url)
    assert "secret" not in msg  # the password is never printed


def test_damaged_study_store(capsys, tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    junk = os.urandom(2048)
    (run_dir / "study.db").write_bytes(junk)
    for extra in ((), ("--resume",)):
        refused(capsys, ("damaged", "not replaced"), "tune", *SMALL, "--budget", "2", "--workers", "1",
                "--out", str(run_dir), *extra)
    assert (run_dir / "study.db").read_bytes() == junk
    (run_dir / "study.db").write_bytes(b"")
    refused(capsys, ("empty (0 bytes)", "not replaced"), "tune", *SMALL, "--budget", "2", "--workers", "1",
            "--out", str(run_dir), "--resume")


def test_lock_held_by_another_live_run(capsys, tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run_dir / "driver.lock").write_text(json.dumps(
            {"pid": other.pid, "host": socket.gethostname(), "since": time.time() - 5}))
        refused(capsys, (f"another run (pid {other.pid}", "is using"),
                "tune", *SMALL, "--budget", "2", "--workers", "1", "--out", str(run_dir), "--resume")
    finally:
        other.kill()
        other.wait()
    assert (run_dir / "driver.lock").exists()  # not taken away from its owner


def test_resume_refuses_a_different_setup_and_continues_the_same(capsys, tmp_path):
    """The issue's example: a resume with another --shape reused the old trials ("best default
    103 us (4096^2) -> winner 5.8 us (100^2)"); another --op left the old trial RUNNING."""
    run_dir = str(tmp_path / "r")
    base = ("tune", "--workers", "1", "--out", run_dir, "--json")
    refused(capsys, ("nothing to resume",), *base, *SMALL, "--budget", "2", "--resume")
    rc, out, err = run(capsys, *base, *SMALL, "--budget", "2")
    assert rc == 0, err
    assert json.loads(out)["trials"] == 2
    for other, needle in (
        (("--op", "relu", "--shape", "100x100"), "shapes [64x64] -> [100x100]"),
        (("--op", "gelu", "--shape", "64x64"), "task op relu -> op gelu"),
        ((*SMALL, "--dtype", "fp16"), "dtype fp32 -> fp16"),
        ((*SMALL, "--soc", "Ascend910B3"), "soc Ascend910B2 -> Ascend910B3"),
    ):
        refused(capsys, ("cannot resume", needle), *base, *other, "--budget", "3", "--resume")
    refused(capsys, ("already has", "--resume"), *base, *SMALL, "--budget", "3")
    rc, out, err = run(capsys, *base, *SMALL, "--budget", "3", "--resume")
    assert rc == 0, err
    assert json.loads(out)["trials"] == 3


# ---------------------------------------------------------------- bugs
def test_internal_error_is_one_paragraph_exit_3_with_the_traceback_in_a_file(capsys, tmp_path, monkeypatch):
    def broken(args):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("ascendcraft.cli.parser.cmd_ops", broken)  # the parser binds the verb
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rc, out, err = run(capsys, "ops")
    assert rc == 3
    msg = one_paragraph(err, "internal error: RuntimeError: boom", "full traceback written to",
                        "ASCENDCRAFT_DEBUG=1")
    path = Path(msg.split("written to ", 1)[1].split(".txt", 1)[0] + ".txt")
    assert path.is_file() and path.is_relative_to(tmp_path)
    text = path.read_text()
    assert "Traceback" in text and "second line" in text and "broken" in text
    monkeypatch.setenv("ASCENDCRAFT_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["ops"])


def test_internal_error_during_tune_is_logged_in_the_run_directory(capsys, tmp_path, monkeypatch):
    import ascendcraft.search.driver as driver

    def broken(*a, **k):
        raise KeyError("no such thing")

    monkeypatch.setattr(driver, "run_search", broken)
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    rc, out, err = run(capsys, "tune", *SMALL, "--budget", "2", "--workers", "1", "--out", str(run_dir))
    assert rc == 3
    one_paragraph(err, "internal error: KeyError", str(run_dir / "internal-error-"))
    (log,) = run_dir.glob("internal-error-*.txt")
    assert "Traceback" in log.read_text()


# ---------------------------------------------------------------- SIGINT
def test_sigint_during_tune_keeps_a_partial_summary_and_resume_completes(tmp_path):
    run_dir = tmp_path / "r"
    budget = 24
    cmd = [sys.executable, "-m", "ascendcraft.cli", "tune", *SMALL, "--budget", str(budget),
           "--workers", "1", "--out", str(run_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = run_dir / "trials.jsonl"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and len(log.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "tune finished before it could be interrupted"
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    msg = one_paragraph(err, "interrupted by SIGINT", "partial summary in", "--resume --out")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] == "interrupted by SIGINT" and summary["evaluated"] < budget
    assert f"after {summary['evaluated']}/{budget}" in msg
    assert (run_dir / "summary.txt").read_text().startswith("PARTIAL RESULT")

    r = subprocess.run([*cmd, "--resume", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["trials"] == budget and json.loads(r.stdout)["partial"] is None
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    evaluated = [json.dumps(x["params"], sort_keys=True) for x in rows if x["evaluated"]]
    assert len(evaluated) == budget == len(set(evaluated))  # none lost, none run twice
    assert all(x["state"] != "RUNNING" for x in rows)


def test_a_loader_bug_is_reported_as_one_not_as_a_bare_key(capsys, monkeypatch):
    """A KeyError inside task loading is ascendcraft's bug: the internal-error report naming it,
    not a one-word 'user error' made of the missing key."""
    import ascendcraft.app.task as app_task

    def broken(*a, **k):
        raise KeyError("future")

    monkeypatch.setattr(app_task, "get_task", broken)
    rc, out, err = run(capsys, "check", "--op", "relu", "--no-timing")
    assert rc == 3
    one_paragraph(err, "internal error: KeyError")
