"""Answers that cost nothing: the response cache (by prompt hash) and the replay of a run.

A prompt is identified by the hash of the model's name and the exact messages sent
(:func:`prompt_hash`), so a rerun of the same task on the same SoC asks the same questions
and is answered from the cache without a token spent. A *replay* answers from a run
directory's stored exchanges (:mod:`.transcript`) and needs no endpoint at all: by hash
when the run asks the same question, otherwise by position (the n-th question of the
same kind), so a replay whose search went differently still runs offline.

Both stores hold answer text as JSON string values in files named by the hash (hex digits
only): nothing in a file name or a path comes from an answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .transcript import EXCHANGES, Transcript


def prompt_hash(model: str, messages: Sequence[dict[str, str]]) -> str:
    """The identity of a question: sha256 of the model name and the messages, in order."""
    blob = json.dumps({"model": model, "messages": list(messages)}, sort_keys=True,
                      ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def _is_hash(text: str) -> bool:
    return len(text) == 64 and all(ch in "0123456789abcdef" for ch in text)


class ResponseCache:
    """``<root>/<hash>.json``: the answer's text and whether it was structured. An entry
    that cannot be read is a miss (and is replaced by the next answer)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if not _is_hash(key):
            raise ValueError("a cache key is a sha256 hex digest")
        return self.root / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            return None
        return entry

    def put(self, key: str, text: str, structured: bool, model: str) -> None:
        """Store atomically (a concurrent reader sees the old entry or the new one)."""
        path = self._path(key)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"text": text, "structured": structured, "model": model}, fh)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written costs tokens next time, nothing else


class ReplayError(ValueError):
    """A run directory that holds no stored exchanges to replay."""


class ReplayCache:
    """The stored exchanges of one run directory, by prompt hash and by position."""

    def __init__(self, run_dir: Path) -> None:
        folder = Path(run_dir) / Transcript.FOLDER / EXCHANGES
        if not folder.is_dir():
            raise ReplayError(f"--replay {run_dir}: no stored LLM exchanges there (expected "
                              f"{Transcript.FOLDER}/{EXCHANGES}/ from a run with --proposer "
                              f"llm or both)")
        self.by_hash: dict[str, dict[str, Any]] = {}
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for path in sorted(folder.glob("*.json")):
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get("response"), str):
                continue  # an exchange that failed has no answer to replay
            self.by_hash.setdefault(str(entry.get("prompt_hash")), entry)
            self.by_kind.setdefault(str(entry.get("kind")), []).append(entry)
        if not self.by_hash:
            raise ReplayError(f"--replay {run_dir}: its stored LLM exchanges hold no answer")
        first = next(iter(self.by_hash.values()))
        self.model = str(first.get("model") or "")  # the model the stored run asked
        self._served: dict[str, int] = {}

    def get(self, key: str, kind: str) -> tuple[dict[str, Any], str] | None:
        """The stored answer to this question and how it was found (``hash`` or
        ``position``); None when the run asked fewer questions of this kind."""
        n = self._served.get(kind, 0)
        self._served[kind] = n + 1
        if key in self.by_hash:
            return self.by_hash[key], "hash"
        same_kind = self.by_kind.get(kind, [])
        if n < len(same_kind):
            return same_kind[n], "position"
        return None
