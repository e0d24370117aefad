"""``ascendcraft check --proposer llm|both`` against a real scripted OpenAI-compatible server
on 127.0.0.1: a good answer, a repair round, garbage, a malicious answer, a rerun from the
cache with zero tokens, an offline replay, no endpoint, and ``ascendcraft prompt``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedServer, candidates_json, fenced

from ascendcraft.cli import main

SHAPE = "16x1000"

RELU = '''@kernel(category="activation")
def relu(x: In[f32], out: Out[f32]):
    TILE = tunable(pow2(256, 16384), default=4096)
    CORES = tunable(choice(1, 2, 4, 8, 16, 24, 32, 40, 48), default=48)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        store(out, t, maximum(load(x, t), 0.0))
'''
WRONG = RELU.replace("maximum(load(x, t), 0.0)", "minimum(load(x, t), 0.0)")
SYNTAX = RELU.replace("store(out, t, maximum(load(x, t), 0.0))", "store(out, t, maximum(load(x, t), 0.0)")


def cand(name: str, dsl: str, **tiling: int) -> dict:
    return {"name": name, "structure": f"{name} structure", "dsl": dsl,
            "tiling": [{"tunable": k, "value": v, "reason": f"{k} reason"} for k, v in tiling.items()]}


@pytest.fixture(autouse=True)
def no_environment_endpoint(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def check(capsys, srv: ScriptedServer | None, run_dir: Path, *extra: str, cache: Path | None = None,
          op: str = "relu") -> tuple[int, dict, str]:
    args = ["check", "--op", op, "--shape", SHAPE, "--no-timing", "--json", "--out", str(run_dir),
            *extra]
    if "--proposer" not in extra:
        args += ["--proposer", "llm"]
    if srv is not None:
        args += ["--base-url", srv.base_url, "--llm-retries", "0"]
    args += ["--llm-cache", str(cache)] if cache else ["--no-llm-cache"]
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out.strip() else {}), err


def test_a_good_answer_is_checked_and_its_exchange_kept(tmp_path, capsys) -> None:
    answer = candidates_json(cand("flat tiles", RELU, TILE=2048))
    with ScriptedServer([Reply(answer)]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run")
    assert rc == 0, err
    [c] = rep["candidates"]
    assert c["correct"] and c["origin"] == "llm" and c["candidate"] == "llm/flat_tiles"
    llm = rep["llm"]
    assert llm["tokens"] == 150 and llm["from_endpoint"] == 1 and llm["rejected_unsafe"] == 0
    assert llm["candidates"]["llm/flat_tiles"]["tiling"]["TILE"] == 2048
    assert llm["candidates"]["llm/flat_tiles"]["reasons"] == {"TILE": "TILE reason"}
    # the prompt that went out: reference, examples of the category, the task, the SoC
    sent = srv.chats[0]["messages"]
    system, user = sent[0]["content"], sent[1]["content"]
    assert "The ascendcraft kernel DSL" in system and "Ascend910B2" in system
    assert "192 KiB" in system and "48 vector cores" in system
    assert "torch.relu(x)" in user and "16x1000" in user
    assert "Examples: expert kernels" in user and "@kernel(category=\"activation\")" in user
    assert "Write 3 candidate kernels" in user
    # the exchange, stored in the run directory, file names of the package's own words
    [exchange] = (tmp_path / "run" / "llm" / "exchanges").iterdir()
    assert exchange.name == "0001-propose.json"
    stored = json.loads(exchange.read_text())
    assert stored["messages"] == sent and stored["response"] == answer
    assert stored["source"] == "endpoint" and stored["prompt_tokens"] == 100
    assert (tmp_path / "run" / "llm" / "report.json").is_file()


def test_a_wrong_kernel_goes_back_once_with_its_error_figures_and_is_repaired(tmp_path, capsys) -> None:
    script = [Reply(candidates_json(cand("tiles", WRONG))), Reply(candidates_json(cand("fixed", RELU)))]
    with ScriptedServer(script) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run")
    assert rc == 0, err
    first, repaired = rep["candidates"]
    assert (first["candidate"], first["status"]) == ("llm/tiles", "wrong")
    assert (repaired["candidate"], repaired["correct"]) == ("llm/tiles-r1", True)
    assert len(srv.chats) == 2
    question = srv.chats[1]["messages"][1]["content"]
    assert "Your kernel `llm/tiles` failed" in question
    assert "stage: correctness" in question and "max abs err" in question
    assert "shapes checked: 16x1000" in question and "minimum(load(x, t), 0.0)" in question
    assert "failing shapes: 16x1000 (seed 0" in question
    kinds = [r["kind"] for r in rep["llm"]["rounds"]]
    assert kinds == ["propose", "repair"]
    assert [p.name for p in sorted((tmp_path / "run" / "llm" / "exchanges").iterdir())] == [
        "0001-propose.json", "0002-repair.json"]


def test_a_syntax_error_goes_back_with_its_line(tmp_path, capsys) -> None:
    script = [Reply(fenced(SYNTAX)), Reply(fenced(RELU))]
    with ScriptedServer(script) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run", "--repair-rounds", "1")
    assert rc == 0, err
    question = srv.chats[1]["messages"][1]["content"]
    assert "stage: parse/check" in question and "- line 7:" in question
    assert [c["correct"] for c in rep["candidates"]] == [True]
    assert rep["llm"]["invalid"] == 1


def test_repairs_are_bounded(tmp_path, capsys) -> None:
    with ScriptedServer([Reply(candidates_json(cand("w", WRONG)))]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run", "--repair-rounds", "2")
    assert rc == 1
    assert [c["candidate"] for c in rep["candidates"]] == ["llm/w", "llm/w-r1", "llm/w-r2"]
    assert len(srv.chats) == 3  # the first round and two repairs, no more


def test_garbage_is_one_readable_error_after_a_format_reminder(tmp_path, capsys) -> None:
    with ScriptedServer([Reply("I am sorry, as a language model..."), Reply("{{{")]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run", "--repair-rounds", "1")
    assert rc == 2 and rep == {}
    assert "proposed no usable candidate" in err and "no JSON object" in err
    assert "Traceback" not in err and "\n" not in err.strip()
    assert len(srv.chats) == 2
    reminder = srv.chats[1]["messages"]
    assert reminder[-2]["role"] == "assistant" and "Answer again with one JSON object" in reminder[-1]["content"]


MALICIOUS = [
    cand("imports", "import os\n" + RELU),
    cand("dunder", RELU.replace("0.0))", "__builtins__))")),
    cand("attr", RELU.replace("maximum(load(x, t), 0.0)", "x.system('id')")),
    cand("cat", RELU.replace('"activation"', '"x\\"); system(\\"touch pwned\\"); //"')),
    cand("../../../tmp/evil", RELU),  # a path as a name: made safe, the program is fine
    cand('k"); system("id"); //', RELU.replace("relu", "relu_b")),  # C++ in the name: made safe
]


def test_a_malicious_answer_is_rejected_and_counted_and_nothing_runs(tmp_path, capsys,
                                                                      monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedServer([Reply(json.dumps({"candidates": MALICIOUS}))]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run", "--llm-candidates", "6")
    assert rc == 0, err
    llm = rep["llm"]
    assert llm["rejected_unsafe"] == 4
    reasons = " | ".join(r["reason"] for r in llm["rejected"])
    assert "imports a module" in reasons and "dunder" in reasons
    assert "attribute access" in reasons and "category that is not one word" in reasons
    assert [c["candidate"] for c in rep["candidates"]] == ["llm/tmp_evil", "llm/k_system_id"]
    assert all(c["correct"] for c in rep["candidates"])
    assert len(srv.chats) == 1  # unsafe programs are not sent back for repair
    assert not (tmp_path / "pwned").exists()
    files = {p.name for p in (tmp_path / "run").rglob("*")}
    assert not any("evil" in f or ".." in f for f in files)


def test_a_rerun_is_served_from_the_cache_with_zero_tokens(tmp_path, capsys) -> None:
    cache = tmp_path / "cache"
    with ScriptedServer([Reply(candidates_json(cand("tiles", RELU)))]) as srv:
        rc1, rep1, _ = check(capsys, srv, tmp_path / "run1", cache=cache)
        rc2, rep2, err = check(capsys, srv, tmp_path / "run2", cache=cache)
        asked = len(srv.chats)
    assert rc1 == rc2 == 0, err
    assert rep1["llm"]["tokens"] == 150 and rep1["llm"]["from_endpoint"] == 1
    assert rep2["llm"]["tokens"] == 0 and rep2["llm"]["from_cache"] == 1
    assert rep2["llm"]["from_endpoint"] == 0 and asked == 1
    exchange = json.loads((tmp_path / "run1" / "llm" / "exchanges" / "0001-propose.json").read_text())
    assert [p.name for p in cache.iterdir()] == [f"{exchange['prompt_hash']}.json"]


def test_a_run_replays_offline_without_an_endpoint(tmp_path, capsys) -> None:
    script = [Reply(candidates_json(cand("tiles", WRONG))), Reply(candidates_json(cand("fixed", RELU)))]
    with ScriptedServer(script) as srv:
        rc, first, err = check(capsys, srv, tmp_path / "run")
    assert rc == 0, err
    # the server is gone; no OPENAI_BASE_URL either
    rc, again, err = check(capsys, None, tmp_path / "replayed", "--replay", str(tmp_path / "run"))
    assert rc == 0, err
    assert again["llm"]["tokens"] == 0 and again["llm"]["from_replay"] == 2
    assert [c["candidate"] for c in again["candidates"]] == [c["candidate"] for c in first["candidates"]]
    assert "replay of" in again["llm"]["endpoint"]


def test_replay_of_a_directory_without_exchanges_is_a_user_error(tmp_path, capsys) -> None:
    rc, _, err = check(capsys, None, tmp_path / "r", "--replay", str(tmp_path))
    assert rc == 2 and "no stored LLM exchanges" in err


def test_no_endpoint_says_how_to_configure_one(tmp_path, capsys) -> None:
    rc, _, err = check(capsys, None, tmp_path / "run")
    assert rc == 2
    assert "OPENAI_BASE_URL" in err and "http://127.0.0.1:11434/v1" in err
    assert "http://127.0.0.1:8000/v1" in err and "--base-url" in err and "--proposer builtin" in err
    assert len(err.strip().splitlines()) == 1


def test_both_compete_and_the_report_names_the_winning_origin(tmp_path, capsys) -> None:
    with ScriptedServer([Reply(candidates_json(cand("tiles", RELU)))]) as srv:
        rc = main(["check", "--op", "relu", "--shape", SHAPE, "--json", "--out", str(tmp_path / "run"),
                   "--proposer", "both", "--base-url", srv.base_url, "--no-llm-cache"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0
    origins = {c["origin"] for c in rep["candidates"]}
    assert "llm" in origins and len(origins) >= 2
    assert rep["best_origin"] in origins and rep["llm"]["winner_origin"] == rep["best_origin"]


def test_prompt_prints_the_filled_template(capsys) -> None:
    assert main(["prompt", "--op", "softmax", "--soc", "Ascend310P3", "--candidates", "4"]) == 0
    out = capsys.readouterr().out
    assert "===== system =====" in out and "===== user =====" in out
    assert "Ascend310P3" in out and "Write 4 candidate kernels for `softmax`" in out
    assert "torch.softmax" in out and "$" not in out.replace("$ ", "")
    assert main(["prompt", "--op", "matmul", "--json"]) == 0
    messages = json.loads(capsys.readouterr().out)
    assert "Cube stages" in messages[0]["content"]


def test_flags_that_cannot_go_together_are_refused(tmp_path, capsys) -> None:
    assert main(["tune", "--op", "relu", "--out", str(tmp_path), "--resume", "--proposer", "llm"]) == 2
    assert "--resume with --proposer llm is not supported" in capsys.readouterr().err
    assert main(["check", "--op", "relu", "--replay", str(tmp_path)]) == 2
    assert "use it with --proposer llm or both" in capsys.readouterr().err


def test_a_second_session_in_the_same_directory_numbers_on(tmp_path, capsys) -> None:
    with ScriptedServer([Reply(candidates_json(cand("tiles", RELU)))]) as srv:
        assert check(capsys, srv, tmp_path / "run")[0] == 0
        assert check(capsys, srv, tmp_path / "run")[0] == 0
    names = sorted(p.name for p in (tmp_path / "run" / "llm" / "exchanges").iterdir())
    assert names == ["0001-propose.json", "0002-propose.json"]


def test_a_server_without_structured_output_is_read_from_fenced_code(tmp_path, capsys) -> None:
    with ScriptedServer([Reply(fenced(RELU), refuse_schema=True)]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run")
    assert rc == 0, err
    assert srv.refused_schema == 1 and ["response_format" in b for b in srv.chats] == [True, False]
    [r] = rep["llm"]["rounds"]
    assert r["structured"] is False and r["form"] == "fenced" and r["accepted"] == ["llm/c1"]
    assert rep["candidates"][0]["correct"]


def test_a_slow_server_past_the_timeout_is_one_readable_error(tmp_path, capsys) -> None:
    with ScriptedServer([Reply(candidates_json(cand("tiles", RELU)), delay_s=3)]) as srv:
        rc, rep, err = check(capsys, srv, tmp_path / "run", "--llm-timeout", "0.5",
                             "--repair-rounds", "0")
    assert rc == 2 and "the request timed out" in err and "Traceback" not in err
    [exchange] = (tmp_path / "run" / "llm" / "exchanges").iterdir()
    assert json.loads(exchange.read_text())["error"] == "the request timed out"
