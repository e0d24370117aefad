"""Where an answer comes from: a replayed run, the response cache, or the endpoint.

:class:`AnswerSource` asks in that order and stores every exchange in the run's
:class:`~.transcript.Transcript`. An answer from the cache or a replay costs no tokens and
says so (``source``); a request that fails (after the client's retries) is an
:class:`Answer` with its ``error``, never an exception: a failed round is reported, it
does not end the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .cache import ReplayCache, ResponseCache, prompt_hash
from .client import ChatClient, LlmRequestError
from .transcript import Transcript


@dataclass
class Usage:
    """What one exchange cost and where its answer came from (``source``: endpoint, cache,
    replay or none); a round's record carries the same value."""

    source: str = "none"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    retries: int = 0
    structured: bool | None = None
    error: str | None = None  # why there is no answer


@dataclass
class Answer:
    """One exchange as the session sees it (``text`` None when the request failed)."""

    number: int
    kind: str
    text: str | None
    prompt_hash: str
    usage: Usage = field(default_factory=Usage)
    note: str = ""


class AnswerSource:
    """Answers questions for one session (``client`` None: offline, replay or cache only)."""

    def __init__(self, model: str, transcript: Transcript, *, client: ChatClient | None = None,
                 cache: ResponseCache | None = None, replay: ReplayCache | None = None,
                 prompt_version: str = "") -> None:
        self.model = model
        self.transcript = transcript
        self.client = client
        self.cache = cache
        self.replay = replay
        self.prompt_version = prompt_version

    def ask(self, kind: str, about: str, messages: Sequence[dict[str, str]],
            schema: dict[str, Any] | None = None) -> Answer:
        number = self.transcript.next_round()
        key = prompt_hash(self.model, messages)
        t0 = time.perf_counter()
        answer = self._answer(number, kind, key, messages, schema)
        if answer.usage.source != "endpoint":
            answer.usage.wall_s = time.perf_counter() - t0
        self.transcript.write_exchange(number, kind, {
            "round": number, "kind": kind, "about": about, "model": self.model,
            "prompt_version": self.prompt_version, "prompt_hash": key,
            "messages": list(messages), "response": answer.text,
            **asdict(answer.usage), "wall_s": round(answer.usage.wall_s, 4), "note": answer.note,
        })
        return answer

    def _answer(self, number: int, kind: str, key: str, messages: Sequence[dict[str, str]],
                schema: dict[str, Any] | None) -> Answer:
        if self.replay is not None:
            found = self.replay.get(key, kind)
            if found is None:
                return Answer(number, kind, None, key, Usage(
                    "replay", error="the replayed run holds no answer to this question"))
            entry, how = found
            note = "" if how == "hash" else "replayed by position: the question differed"
            return Answer(number, kind, entry["response"], key,
                          Usage("replay", structured=entry.get("structured")), note)
        if self.cache is not None:
            entry = self.cache.get(key)
            if entry is not None:
                return Answer(number, kind, entry["text"], key,
                              Usage("cache", structured=entry.get("structured")))
        if self.client is None:
            return Answer(number, kind, None, key, Usage(error="no endpoint to ask"))
        try:
            reply = self.client.complete(self.model, messages, schema)
        except LlmRequestError as e:
            return Answer(number, kind, None, key, Usage("endpoint", wall_s=e.wall_s,
                                                         retries=e.retries, error=str(e)))
        if self.cache is not None and reply.text.strip():
            self.cache.put(key, reply.text, reply.structured, self.model)
        finish = reply.finish_reason
        return Answer(number, kind, reply.text, key,
                      Usage("endpoint", reply.prompt_tokens, reply.completion_tokens,
                            reply.wall_s, reply.retries, reply.structured),
                      f"finish: {finish}" if finish not in ("", "stop") else "")
