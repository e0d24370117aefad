"""Trial outcomes remembered across runs, so a rerun, a resume or a re-validation of a trial
already evaluated costs a lookup instead of a build, a check and a timing run.

One SQLite file under the user cache dir (``<cache root>/outcomes.sqlite``, the root the
emulator's build cache uses; ``$ASCENDCRAFT_OUTCOME_CACHE`` names another file, or ``off``
disables it). The key is a hash of everything an outcome depends on: the candidate's source,
the tunable values, what was asked (search check + timing, or re-validation seeds), the task
(its name or file hash, shapes, dtype, tolerance, check shapes), the SoC, the model version,
the ascendcraft version and the emulator headers. Only outcomes that a rerun would give
again are kept (:func:`cacheable`): never a timeout, a crash, an interruption, a trace limit
or a build stopped by a limit of the machine. The file is bounded (oldest-used entries go
beyond ``MAX_ENTRIES``), shared by concurrent workers (WAL, short transactions; a busy file
is a miss, never a wait), and a damaged file is moved aside with a warning and replaced by a
fresh one: the cache can lose entries, never a trial.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import sqlite3
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..emulator.build import cache_root
from ..search.space import CACHED_METRIC, Candidate, TrialOutcome
from ..status import Status

CACHE_ENV = "ASCENDCRAFT_OUTCOME_CACHE"
"""Path of the cache file, or ``off`` / ``0`` / ``no`` to disable the cache."""
_OFF = {"off", "0", "no", "false", "none"}

FILE_NAME = "outcomes.sqlite"
MAX_ENTRIES = 50_000
"""Entries kept; beyond it the least recently used go (about 2 KB each: ~100 MB at most)."""
PRUNE_EVERY = 200  # puts between two size checks
BUSY_TIMEOUT_S = 2.0  # a writer waits this long for another one, then gives up (a miss)
SCHEMA = 1

_CACHEABLE = {Status.OK, Status.WRONG, Status.INFEASIBLE, Status.DSL_ERROR, Status.BUILD_ERROR}
# a build error is the source's fault only when the compiler itself rejected it: not when a
# time, CPU, memory or file limit of this machine stopped it (build.py's wording)
_SOURCE_BUILD_ERROR = re.compile(r"compilation of \S+ failed:\n")
_MACHINE_BUILD_ERROR = re.compile(r"memory exhausted|out of memory|cannot allocate|No space left",
                                  re.IGNORECASE)


class OutcomeCacheWarning(UserWarning):
    """The cache file was unusable (damaged, unwritable): the run goes on without it."""


def cache_path() -> Path | None:
    """The cache file this process uses, None when the cache is disabled."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env.lower() in _OFF:
        return None
    return Path(env) if env else cache_root() / FILE_NAME


def cacheable(outcome: TrialOutcome, model_version: str) -> bool:
    """Whether a rerun would give this outcome again: ok (untimed, or its time from the model
    version of the key: a modeled time is deterministic, a measured one is not), wrong, infeasible, a
    DSL error, or a compile error that is the source's (not a limit of the machine)."""
    status = outcome.status
    if status not in _CACHEABLE:
        return False
    if status is Status.OK:  # untimed (a re-validation) or timed by this model version
        return outcome.time_us is None or outcome.metrics.get("model_version") == model_version
    if status is Status.BUILD_ERROR:
        msg = outcome.message
        return bool(_SOURCE_BUILD_ERROR.match(msg)) and not _MACHINE_BUILD_ERROR.search(msg)
    return True


_CODE_SUFFIXES = (".py", ".h", ".json")
_code_digest: str | None = None


def code_digest() -> str:
    """Hash of the package's own code (Python, emulator headers, SoC files): a development
    tree changes without a version bump, and an outcome of other code must not be reused."""
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        roots = sorted({Path(importlib.import_module(m).__file__).resolve().parent
                        for m in ("ascendcraft", "ascendcraft.search", "ascendcraft.dsl",
                                  "ascendcraft.cluster")})
        for root in roots:
            for p in sorted(root.rglob("*")):
                if p.suffix in _CODE_SUFFIXES and "__pycache__" not in p.parts and p.is_file():
                    h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
        _code_digest = h.hexdigest()[:24]
    return _code_digest


def trial_key(base: Mapping[str, Any], candidate: Candidate, params: Mapping[str, int],
              purpose: str) -> str:
    """The cache key of one trial: ``base`` (task, SoC, versions...) + source + values + purpose."""
    doc = {"base": dict(base), "source": candidate.source, "purpose": purpose,
           "params": {str(k): int(v) for k, v in sorted(params.items())}}
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class OutcomeCache:
    """The SQLite file of remembered outcomes. Picklable (the connection is per process and
    opened on first use); every failure of the file is a miss or a skipped write."""

    def __init__(self, path: Path, max_entries: int = MAX_ENTRIES) -> None:
        self.path = Path(path)
        self.max_entries = max_entries
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._puts = 0
        self._broken = False

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "max_entries": self.max_entries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["max_entries"])

    # ---- the file -----------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn, self._pid = None, os.getpid()  # a forked child opens its own
        for attempt in range(2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, "
                             "value TEXT NOT NULL, used REAL NOT NULL)")
                conn.execute("CREATE INDEX IF NOT EXISTS outcomes_used ON outcomes(used)")
                conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                row = conn.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
                if row is None or row[0] != str(SCHEMA):
                    raise sqlite3.DatabaseError(f"schema {row and row[0]!r}, expected {SCHEMA}")
                self._conn = conn
                return conn
            except sqlite3.OperationalError as e:
                if _busy(e):  # another worker holds it right now: no cache for this call
                    return None
                return self._give_up(e)  # cannot open or write it (permissions, disk)
            except sqlite3.DatabaseError as e:  # not a database, or not ours
                if attempt == 0 and self._replace_damaged(e):
                    continue
                return self._give_up(e)
            except OSError as e:
                return self._give_up(e)
        return None

    def _replace_damaged(self, err: Exception) -> bool:
        """Move a damaged file aside (another process may have done it already)."""
        if not self.path.exists():
            return False
        aside = self.path.with_name(f"{self.path.name}.damaged-{os.getpid()}-{int(time.time())}")
        try:
            self.path.replace(aside)
        except FileNotFoundError:
            return True  # someone else moved it: open the fresh one
        except OSError:
            return False
        for suffix in ("-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        warnings.warn(f"outcome cache {self.path} was unreadable ({err}); moved it to "
                      f"{aside.name} and started a fresh cache", OutcomeCacheWarning, stacklevel=3)
        return True

    def _give_up(self, err: Exception) -> None:
        self._broken = True
        warnings.warn(f"outcome cache {self.path} unusable ({err}); this run goes on without it "
                      f"(set {CACHE_ENV}=off to silence this)", OutcomeCacheWarning, stacklevel=3)
        return None

    def _fault(self, err: sqlite3.Error) -> None:
        """An error mid-use: a busy file is only a miss; a file that cannot be written is
        given up; anything else is a damaged file, replaced by a fresh one."""
        if isinstance(err, sqlite3.OperationalError) and _busy(err):
            return
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None
        if isinstance(err, sqlite3.OperationalError) or not self._replace_damaged(err):
            self._give_up(err)

    # ---- entries ------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        """The outcome stored under ``key`` (as :meth:`TrialOutcome.to_dict`), or None."""
        conn = self._connect()
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT value FROM outcomes WHERE key=?", (key,)).fetchone()
            if row is None:
                return None
        except sqlite3.Error as e:
            self._fault(e)
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            value = None
        try:  # best effort: a busy file keeps the old time
            if isinstance(value, dict):
                conn.execute("UPDATE outcomes SET used=? WHERE key=?", (time.time(), key))
            else:
                conn.execute("DELETE FROM outcomes WHERE key=?", (key,))
        except sqlite3.Error as e:
            self._fault(e)
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key``; every so often drop the least recently used."""
        conn = self._connect()
        if conn is None:
            return
        try:
            text = json.dumps(dict(value), default=repr)
            conn.execute("INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?)", (key, text, time.time()))
            self._puts += 1
            if self._puts % PRUNE_EVERY == 1:
                self.prune()
        except sqlite3.Error as e:
            self._fault(e)

    def prune(self) -> None:
        """Keep at most ``max_entries`` entries (the most recently used)."""
        conn = self._connect()
        if conn is None:
            return
        n = conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        if n > self.max_entries:
            conn.execute("DELETE FROM outcomes WHERE key IN (SELECT key FROM outcomes "
                         "ORDER BY used LIMIT ?)", (n - self.max_entries,))

    def __len__(self) -> int:
        conn = self._connect()
        if conn is None:
            return 0
        try:
            return int(conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0])
        except sqlite3.Error as e:
            self._fault(e)
            return 0


def _busy(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


@dataclass
class CachedObjective:
    """An objective whose deterministic outcomes are remembered (see the module docstring).

    ``base`` describes what every trial of the run shares (task, shapes, dtype, SoC,
    versions); a hit is the stored outcome with ``metrics["cached"] = True``."""

    inner: Any
    cache: OutcomeCache
    base: dict[str, Any]
    model_version: str
    purposes: dict[str, str] = field(default_factory=dict)

    def feasible(self, candidate: Candidate, params: dict[str, int]) -> str | None:
        return self.inner.feasible(candidate, params)

    def evaluate(self, candidate: Candidate, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        return self._through("evaluate", candidate, params,
                             lambda: self.inner.evaluate(candidate, params, timeout_s))

    def revalidate(self, candidate: Candidate, params: dict[str, int]) -> TrialOutcome:
        return self._through("revalidate", candidate, params,
                             lambda: self.inner.revalidate(candidate, params))

    def _through(self, what: str, candidate: Candidate, params: dict[str, int], run) -> TrialOutcome:
        key = trial_key(self.base, candidate, params, self.purposes.get(what, what))
        hit = self.cache.get(key)
        if hit is not None:
            out = TrialOutcome.from_dict(hit)
            if out.status is not Status.CRASH:  # an unreadable entry is re-evaluated
                out.metrics[CACHED_METRIC] = True  # it keeps its model_version
                return out
        out = run()
        if isinstance(out, TrialOutcome) and cacheable(out, self.model_version):
            self.cache.put(key, out.to_dict())
        return out
