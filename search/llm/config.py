"""How the LLM proposer reaches its model and how much it may ask of it.

One frozen value, filled by the application layer from the command line and the
environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), read by every part of the package.
The API key is kept out of ``repr`` so it never lands in a log or a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: What a user without an endpoint is told (one paragraph; the CLI prints it and exits 2).
NO_ENDPOINT = (
    "--proposer {kind} needs an OpenAI-compatible chat-completions endpoint and none is "
    "configured: set OPENAI_BASE_URL (a local Ollama server is http://127.0.0.1:11434/v1, "
    "a local vLLM server http://127.0.0.1:8000/v1) or pass --base-url URL, set "
    "OPENAI_API_KEY if the server wants a key (a hosted service: the key alone selects "
    "api.openai.com), and pass --model NAME when the server offers more than one model; "
    "or rerun a stored session offline with --replay RUN_DIR. `ascendcraft prompt --op "
    "NAME` prints the prompt that would be sent; --proposer builtin (the default) needs no "
    "endpoint."
)


@dataclass(frozen=True)
class LlmConfig:
    """``base_url``/``api_key``/``model``: the endpoint (None: the environment's, and the
    server's only model). ``candidates``: distinct kernels asked for per propose or
    optimisation round. ``repair_rounds``: how often one candidate's line may go back with
    its error. ``optimise_rounds``: rounds that send the best kernel so far back during a
    search. ``timeout_s``/``retries``/``backoff_s``: per request (a 429, a 5xx, a timeout
    or a dropped connection is retried with exponential backoff from ``backoff_s``).
    ``cache_dir``: the response cache (None: none). ``replay_dir``: a run directory whose
    stored responses answer instead of an endpoint (offline)."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    candidates: int = 3
    repair_rounds: int = 2
    optimise_rounds: int = 2
    timeout_s: float = 300.0
    retries: int = 3
    backoff_s: float = 1.0
    backoff_cap_s: float = 30.0
    max_tokens: int | None = None
    temperature: float | None = None
    cache_dir: Path | None = None
    replay_dir: Path | None = None

    def __post_init__(self) -> None:
        for name, lo in (("candidates", 1), ("repair_rounds", 0), ("optimise_rounds", 0),
                         ("retries", 0)):
            if int(getattr(self, name)) < lo:
                raise ValueError(f"{name} must be at least {lo}, got {getattr(self, name)}")
        if not self.timeout_s > 0 or self.backoff_s < 0 or self.backoff_cap_s < 0:
            raise ValueError("timeout_s must be > 0 and the backoff times >= 0")

    @property
    def offline(self) -> bool:
        """Answers come from a stored run, no endpoint is contacted."""
        return self.replay_dir is not None

    @property
    def has_endpoint(self) -> bool:
        """An endpoint is configured: a base URL, or a key for the default hosted one."""
        return bool(self.base_url or self.api_key)

    def where(self) -> str:
        """The endpoint as a report names it (never the key)."""
        if self.offline:
            return f"replay of {self.replay_dir}"
        return self.base_url or "the OpenAI API (default base URL)"


def from_environment(env: Mapping[str, str] | None = None, **given: object) -> LlmConfig:
    """An :class:`LlmConfig` from ``given`` values (None: not given), the base URL and key
    falling back on ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``."""
    env = os.environ if env is None else env
    values = {k: v for k, v in given.items() if v is not None}
    values.setdefault("base_url", env.get("OPENAI_BASE_URL") or None)
    values.setdefault("api_key", env.get("OPENAI_API_KEY") or None)
    return LlmConfig(**values)  # type: ignore[arg-type]
