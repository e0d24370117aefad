"""One chat completion from an OpenAI-compatible server, with retries and structured output.

Every server ascendcraft targets (vLLM, llama.cpp's server, Ollama, SGLang, hosted
services) speaks the chat-completions protocol, so the ``openai`` client reaches them all.
What differs is handled here:

* **Structured output.** The first request asks for a JSON-schema ``response_format``. A
  server that refuses it (HTTP 400 or 422) is asked again without it, and this client
  remembers not to ask again; the prompt itself describes the same JSON, and the extraction
  falls back on fenced code blocks.
* **Transient failures.** 429, 5xx, 408, timeouts and dropped connections are retried up to
  ``retries`` times with exponential backoff (and jitter), waiting at least what a
  ``Retry-After`` header says, never longer than ``backoff_cap_s``. The openai client's
  own retries are off so the count and the waits are ours to report.

Nothing here looks at what the answer says: it returns the text.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from .config import LlmConfig

#: Statuses worth asking again: rate limits, server trouble, a request timeout on its side.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class LlmRequestError(Exception):
    """A request that did not produce an answer; the message is one readable sentence."""

    def __init__(self, message: str, retries: int = 0, wall_s: float = 0.0) -> None:
        super().__init__(message)
        self.retries = retries
        self.wall_s = wall_s


@dataclass(frozen=True)
class Reply:
    """An answer: its text, the tokens the server counted, how long it took (all attempts,
    waits included), how many retries it needed and whether structured output was used."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    retries: int
    structured: bool
    finish_reason: str = ""


class ChatClient:
    """Chat completions against one endpoint (``config.base_url``, ``config.api_key``)."""

    def __init__(self, config: LlmConfig, *, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.structured_ok: bool | None = None  # unknown until the server answers
        self._client = openai.OpenAI(
            base_url=config.base_url or None, api_key=config.api_key or "not-needed",
            timeout=config.timeout_s, max_retries=0)

    # ---- model --------------------------------------------------------------------------
    def resolve_model(self) -> str:
        """The configured model, or the server's only one; an error naming what it offers."""
        if self.config.model:
            return self.config.model
        try:
            ids = sorted(m.id for m in self._client.models.list())
        except openai.APIError as e:
            raise LlmRequestError(f"cannot list the models of {self.config.where()} "
                                  f"({_describe(e)}); pass --model NAME") from None
        if len(ids) == 1:
            return ids[0]
        offer = ", ".join(ids[:12]) + (", ..." if len(ids) > 12 else "") if ids else "none"
        raise LlmRequestError(f"{self.config.where()} offers {len(ids)} models ({offer}); "
                              f"choose one with --model NAME")

    # ---- completion ---------------------------------------------------------------------
    def complete(self, model: str, messages: Sequence[dict[str, str]],
                 schema: dict[str, Any] | None = None) -> Reply:
        """One answer to ``messages``; :class:`LlmRequestError` when every attempt failed.
        ``schema``: the JSON schema to ask for as structured output (if the server can)."""
        t0 = time.perf_counter()
        retries = 0
        use_schema = schema is not None and self.structured_ok is not False
        attempt = 0
        while True:
            try:
                reply = self._create(model, messages, schema if use_schema else None)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as e:
                if use_schema:  # the server does not do structured output: ask plainly
                    use_schema = False
                    self.structured_ok = False
                    continue
                raise LlmRequestError(f"the server refused the request ({_describe(e)})",
                                      retries, time.perf_counter() - t0) from None
            except (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError) as e:
                status = getattr(e, "status_code", None)
                transient = status is None or status in RETRY_STATUSES
                if not transient or attempt >= self.config.retries:
                    how = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
                    raise LlmRequestError(f"{_describe(e)}{how}", retries,
                                          time.perf_counter() - t0) from None
                self._sleep(self._backoff(attempt, e))
                attempt += 1
                retries += 1
                continue
            except openai.APIError as e:  # e.g. a 200 whose body is not a chat completion
                raise LlmRequestError(f"the server's answer is not a chat completion "
                                      f"({_describe(e)})", retries,
                                      time.perf_counter() - t0) from None
            if use_schema:
                self.structured_ok = True
            text, usage, finish = reply
            return Reply(text, usage[0], usage[1], time.perf_counter() - t0, retries, use_schema,
                         finish)

    def _create(self, model: str, messages: Sequence[dict[str, str]],
                schema: dict[str, Any] | None) -> tuple[str, tuple[int, int], str]:
        kwargs: dict[str, Any] = {"model": model, "messages": list(messages)}
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "kernel_candidates", "schema": schema, "strict": False}}
        resp = self._client.chat.completions.create(**kwargs)
        usage = getattr(resp, "usage", None)
        counts = (int(getattr(usage, "prompt_tokens", 0) or 0),
                  int(getattr(usage, "completion_tokens", 0) or 0)) if usage else (0, 0)
        choices = getattr(resp, "choices", None) or []
        if not choices:  # an empty answer: the extraction reports that it holds no program
            return "", counts, "no choice"
        msg = choices[0].message
        text = (getattr(msg, "content", None) or "") if msg is not None else ""
        return str(text), counts, str(getattr(choices[0], "finish_reason", "") or "")

    def _backoff(self, attempt: int, error: Exception) -> float:
        """Exponential backoff with up to 25% jitter, at least the server's Retry-After."""
        cap = self.config.backoff_cap_s
        wait = min(cap, self.config.backoff_s * (2 ** attempt)) * (1 + 0.25 * self._rng.random())
        after = _retry_after(error)
        if after is not None:
            wait = max(wait, after)
        return min(cap, wait)


def _retry_after(error: Exception) -> float | None:
    """The ``Retry-After`` seconds of an HTTP error, if it gives a number."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        value = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _describe(error: Exception) -> str:
    """One line: the HTTP status and the server's own message, or the kind of failure."""
    if isinstance(error, openai.APITimeoutError):
        return "the request timed out"
    if isinstance(error, openai.APIConnectionError):
        return f"cannot reach the server ({' '.join(str(error).split())[:160]})"
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    detail = body.get("message") if isinstance(body, dict) else None
    text = " ".join(str(detail or error).split())[:200]
    return f"HTTP {status}: {text}" if status else text
