"""Every question and answer of a run, kept in its run directory.

``<run_dir>/llm/exchanges/NNNN-<kind>.json`` holds one exchange: the messages sent, the
answer's text, where it came from (``endpoint``, ``cache``, ``replay``), the tokens and
the wall time; ``<run_dir>/llm/rounds.jsonl`` one line per round with what became of the
answer (candidates accepted, rejected as unsafe, invalid). File names are the round's
number and kind (the package's own words): nothing of an answer names a file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXCHANGES = "exchanges"
KINDS = ("propose", "repair", "optimise")


class Transcript:
    """Writes the exchanges and rounds of one session (``run_dir`` None: keeps nothing)."""

    FOLDER = "llm"

    def __init__(self, run_dir: Path | None) -> None:
        self.folder = Path(run_dir) / self.FOLDER if run_dir is not None else None
        self.count = self._last_number()

    def _last_number(self) -> int:
        """The highest exchange number already in the folder: a second session in the same
        directory numbers on, never over a stored exchange."""
        if self.folder is None or not (self.folder / EXCHANGES).is_dir():
            return 0
        numbers = [int(p.name[:4]) for p in (self.folder / EXCHANGES).glob("*.json")
                   if p.name[:4].isdigit()]
        return max(numbers, default=0)

    def next_round(self) -> int:
        self.count += 1
        return self.count

    def write_exchange(self, number: int, kind: str, entry: Mapping[str, Any]) -> Path | None:
        if kind not in KINDS:
            raise ValueError(f"unknown round kind {kind!r}")
        if self.folder is None:
            return None
        folder = self.folder / EXCHANGES
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{int(number):04d}-{kind}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(dict(entry), indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        tmp.replace(path)
        return path

    def write_round(self, row: Mapping[str, Any]) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "rounds.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(dict(row), ensure_ascii=False) + "\n")

    def write_report(self, report: Mapping[str, Any]) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "report.json").write_text(
            json.dumps(dict(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
