"""``ascendcraft tune --proposer llm|both`` against a real scripted server on 127.0.0.1: the
LLM's tiling goes first, a candidate failing in the search is repaired, an optimisation
round adds a faster kernel to the same study, and the summary says who won and whose
tiling won."""

from __future__ import annotations

import json

import pytest
from llm_server import Reply, ScriptedServer, candidates_json

from ascendcraft.cli import main

SLOW = '''@kernel(category="activation")
def relu(x: In[f32], out: Out[f32]):
    TILE = tunable(choice(256, 512), default=256)
    CORES = tunable(choice(1, 2), default=1)
    for t in tiles(x, tile=TILE, cores=CORES):
        store(out, t, maximum(load(x, t), 0.0))
'''
FAST = '''@kernel(category="activation")
def relu(x: In[f32], out: Out[f32]):
    TILE = tunable(pow2(256, 8192), default=1024)
    CORES = tunable(choice(8, 16, 48), default=16)
    DEPTH = tunable(choice(1, 2), default=2)
    for t in tiles(x, tile=TILE, cores=CORES, depth=DEPTH):
        store(out, t, maximum(load(x, t), 0.0))
'''
WRONG = SLOW.replace("maximum(load(x, t), 0.0)", "minimum(load(x, t), 0.0)")


def cand(name: str, dsl: str, **tiling: int) -> dict:
    return {"name": name, "structure": name, "dsl": dsl,
            "tiling": [{"tunable": k, "value": v, "reason": f"{k} because"} for k, v in tiling.items()]}


def answer_by_question(body: dict) -> Reply:
    """Propose: a slow kernel and a wrong one; repair: the corrected one; optimise: a fast one."""
    user = body["messages"][-1]["content"]
    if "failed" in user:
        return Reply(candidates_json(cand("fixed", SLOW)))
    if "The fastest correct kernel so far" in user:
        return Reply(candidates_json(cand("many cores", FAST, CORES=48)))
    return Reply(candidates_json(cand("slow", SLOW, TILE=512, CORES=2), cand("wrong", WRONG)))


@pytest.fixture(autouse=True)
def no_environment_endpoint(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def tune(capsys, srv: ScriptedServer, out, *extra: str) -> tuple[int, dict]:
    rc = main(["tune", "--op", "relu", "--shape", "16x2048", "--workers", "1", "--json",
               "--out", str(out), "--base-url", srv.base_url, "--no-llm-cache",
               "--llm-candidates", "2", *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_repair_and_optimisation_rounds_join_the_study(tmp_path, capsys) -> None:
    with ScriptedServer(answer_by_question) as srv:
        rc, s = tune(capsys, srv, tmp_path / "run", "--proposer", "llm", "--budget", "9",
                     "--optimise-rounds", "1", "--repair-rounds", "1")
    assert rc == 0
    llm = s["llm"]
    kinds = sorted(r["kind"] for r in llm["rounds"])
    assert kinds == ["optimise", "propose", "repair"], llm["rounds"]
    made = set(llm["candidates"])
    assert {"llm/slow", "llm/wrong", "llm/wrong-r1", "llm/o1-many_cores"} == made
    assert s["trials"] == 9  # rounds' candidates share the budget
    # the optimisation round improved on the first round: its kernel won
    assert s["best"]["candidate"] == "llm/o1-many_cores" and s["best"]["correct"]
    assert s["best_origin"] == "llm"
    # what the optimisation round was told: the incumbent's modeled figures
    [opt] = [b["messages"][-1]["content"] for b in srv.chats
             if "The fastest correct kernel so far" in b["messages"][-1]["content"]]
    assert "(modeled)" in opt and "pipe utilisation: " in opt and "bound: " in opt
    assert "% of the roofline time" in opt and "tuned parameters: {" in opt
    # the repair round was told the trial's error
    [rep] = [b["messages"][-1]["content"] for b in srv.chats if "failed" in b["messages"][-1]["content"]]
    assert "stage: correctness" in rep and "max abs err" in rep
    rows = [json.loads(line) for line in (tmp_path / "run" / "trials.jsonl").read_text().splitlines()]
    by = {}
    for r in rows:
        by.setdefault(r["candidate"], []).append(r)
    # the wrong kernel got one trial, then was retired for its repair
    assert len(by["llm/wrong"]) == 1 and by["llm/wrong"][0]["status"] == "wrong"
    # the LLM's tiling went right after the defaults
    slow = sorted(by["llm/slow"], key=lambda r: r["number"])
    assert slow[0]["params"] == {"TILE": 256, "CORES": 1}
    assert slow[1]["params"] == {"TILE": 512, "CORES": 2}
    # the summary: the verdicts and the accounts, also in summary.txt and the run files
    text = (tmp_path / "run" / "summary.txt").read_text()
    assert "tiling of llm/slow: the LLM's {\"TILE\": 512, \"CORES\": 2}" in text
    assert "winner origin: llm (llm/o1-many_cores" in text
    assert "LLM proposer: model scripted-model" in text and "tokens 450" in text
    verdict = {v["candidate"]: v for v in llm["tiling"]}["llm/slow"]
    assert verdict["winner"] in ("llm", "search", "tie") and "llm_us" in verdict
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "llm/o1-many_cores" in json.dumps(run)


def test_both_competes_in_one_study_and_names_the_winner(tmp_path, capsys) -> None:
    with ScriptedServer(answer_by_question) as srv:
        rc, s = tune(capsys, srv, tmp_path / "run", "--proposer", "both", "--budget", "5",
                     "--optimise-rounds", "0", "--repair-rounds", "0", "--llm-candidates", "1")
    assert rc == 0
    cands = set(s["defaults"])
    assert "llm/slow" in cands and any(not c.startswith("llm/") for c in cands)
    assert s["best_origin"] == s["llm"]["winner_origin"] and s["best_origin"] != "llm"
    text = (tmp_path / "run" / "summary.txt").read_text()
    assert f"winner origin: {s['best_origin']}" in text and "the best llm candidate llm/slow" in text


def test_an_endpoint_that_fails_mid_search_does_not_end_it(tmp_path, capsys) -> None:
    def script(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        if "The fastest correct kernel so far" in user:
            return Reply("down", status=500)
        return Reply(candidates_json(cand("slow", SLOW)))

    with ScriptedServer(script) as srv:
        rc, s = tune(capsys, srv, tmp_path / "run", "--proposer", "llm", "--budget", "4",
                     "--optimise-rounds", "1", "--llm-retries", "1")
    assert rc == 0 and s["trials"] == 4 and s["best"]["candidate"] == "llm/slow"
    failed = [r for r in s["llm"]["rounds"] if r["error"]]
    assert failed and "HTTP 500" in failed[0]["error"] and failed[0]["retries"] == 1
