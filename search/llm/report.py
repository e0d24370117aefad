"""The LLM session's part of a report: its accounts, who won, and whose tiling won.

Plain functions of the session's report (:meth:`~.session.LlmSession.report`), the trial
rows of a search (``trials.jsonl``) and the candidates' best times; the application layer
puts the lines under ``tune``'s and ``check``'s summaries and the dicts into their JSON.
A time is always shown with the kind its backend gave it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def accounting_lines(rep: Mapping[str, Any]) -> list[str]:
    """The rounds (kind, what for, where the answer came from, tokens, wall time, what came
    of it) and the totals."""
    lines = [f"LLM proposer: model {rep['model']} ({rep['endpoint']}), prompt {rep['prompt_version']}",
             f"  {'round':>5}  {'kind':<9} {'for':<26} {'answer':<9} {'tokens in/out':>14} "
             f"{'wall':>7}  result"]
    for r in rep["rounds"]:
        if r["error"]:
            result = f"failed: {r['error']}"
        else:
            result = (f"{len(r['accepted'])} accepted of {r['drafts']} ({r['form']})"
                      + (f", {r['unsafe']} unsafe" if r["unsafe"] else "")
                      + (f", {r['invalid']} invalid" if r["invalid"] else ""))
        retries = f", {r['retries']} retries" if r["retries"] else ""
        lines.append(f"  {r['number']:>5}  {r['kind']:<9} {str(r['about'])[:26]:<26} {r['source']:<9} "
                     f"{r['prompt_tokens']:>6}/{r['completion_tokens']:<7} {r['wall_s']:>6.1f}s  "
                     f"{result[:90]}{retries}")
    lines.append(f"  tokens {rep['tokens']} (prompt {rep['prompt_tokens']}, completion "
                 f"{rep['completion_tokens']}); {rep['requests']} requests: {rep['from_endpoint']} "
                 f"to the endpoint, {rep['from_cache']} from the cache, {rep['from_replay']} "
                 f"replayed; {rep['retries']} retries; LLM wall time {rep['wall_s']:.1f}s")
    lines.append(f"  rejected as unsafe: {rep['rejected_unsafe']}; invalid programs: "
                 f"{rep['invalid']}; failed requests: {rep['failed_requests']}; unreadable "
                 f"answers: {rep['unreadable_answers']}")
    for r in rep["rejected"][:5]:
        lines.append(f"    round {r['round']}: {r['candidate']} {r['reason']}")
    return lines


def tiling_verdicts(rep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For every LLM candidate whose tiling proposal was tried: the proposal's outcome
    against the best of the search's own assignments (defaults and sampler), and who won."""
    out = []
    for name, info in rep["candidates"].items():
        proposal = info.get("tiling") or {}
        if not proposal:
            continue
        mine = [r for r in rows if r.get("candidate") == name and r.get("evaluated")]
        llm = [r for r in mine if r.get("params") == proposal]
        other = [r for r in mine if r.get("params") != proposal and r.get("status") == "ok"
                 and r.get("time_us")]
        llm_ok = [r for r in llm if r.get("status") == "ok" and r.get("time_us")]
        v: dict[str, Any] = {"candidate": name, "llm_params": proposal,
                             "reasons": info.get("reasons", {})}
        if llm_ok:
            v.update(llm_us=float(llm_ok[0]["time_us"]), timing=llm_ok[0].get("timing") or "")
        else:
            v["llm_status"] = llm[0].get("status") if llm else "not evaluated"
        if other:
            best = min(other, key=lambda r: float(r["time_us"]))
            v.update(search_us=float(best["time_us"]), search_params=best.get("params"),
                     timing=v.get("timing") or best.get("timing") or "")
        if "llm_us" in v and "search_us" in v:
            a, b = v["llm_us"], v["search_us"]
            v["winner"] = "tie" if a == b else "llm" if a < b else "search"
            v["factor"] = (b / a) if a <= b else (a / b)
        elif "llm_us" in v or "search_us" in v:
            v["winner"] = "llm" if "llm_us" in v else "search"
        out.append(v)
    return out


def tiling_lines(verdicts: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for v in verdicts:
        kind = v.get("timing") or ""
        unit = f" us {kind}".rstrip()
        llm = (f"{v['llm_us']:.3f}{unit}" if "llm_us" in v else v.get("llm_status", "-"))
        head = f"  tiling of {v['candidate']}: the LLM's {json.dumps(v['llm_params'])} {llm}"
        if "search_us" in v:
            head += f"; the search's best {json.dumps(v['search_params'])} {v['search_us']:.3f}{unit}"
        if "factor" in v and v["llm_us"] == v["search_us"]:
            head += ": a tie"
        elif "factor" in v:
            who = "the LLM's values" if v["winner"] == "llm" else "the search's values"
            head += f": {who} won by {v['factor']:.2f}x"
        elif v.get("winner"):
            head += ": only the " + ("LLM's values" if v["winner"] == "llm" else "search's values") + " worked"
        lines.append(head)
    return lines


def origin_lines(winner: tuple[str, str, float, str] | None,
                 bests: Sequence[tuple[str, str, float]]) -> list[str]:
    """Who won (``winner``: name, origin, time, kind) and by how much against the best
    candidate of any other origin (``bests``: name, origin, time of every correct one)."""
    if winner is None:
        return ["  winner: none (no correct kernel), so no origin won"]
    name, origin, t, kind = winner
    line = f"  winner origin: {origin} ({name}, {t:.3f} us {kind})".replace("  )", ")")
    others = [b for b in bests if b[1] != origin]
    if others:
        o_name, o_origin, o_t = min(others, key=lambda b: b[2])
        factor = o_t / t if t > 0 else float("inf")
        line += (f"; the best {o_origin} candidate {o_name} {o_t:.3f} us: {origin} faster by "
                 f"{factor:.2f}x" if factor >= 1 else
                 f"; the best {o_origin} candidate {o_name} {o_t:.3f} us")
    else:
        line += "; no candidate of another origin was correct"
    return [line]
