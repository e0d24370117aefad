"""What a run measured, recorded so that a resume never mixes trials of different setups.

A trial's time only compares with another's when both timed the same task at the same
shapes and dtype on the same SoC model, with the same candidate sources, ascendcraft and
model versions.  The caller describes the task part (``identity``); the candidates' source
hashes are added here.  The record is kept twice: ``run.json`` in the run directory (for
people, and for a run whose storage lives elsewhere) and the ``identity`` user attribute of
every candidate's study (the storage is the source of truth).  A resume compares the stored
record with the current one and refuses any difference, naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optuna.storages import BaseStorage

from .errors import SearchSetupError
from .space import Candidate
from .storage import redact

RUN_FILE = "run.json"
STUDY_ATTR = "identity"


def source_hash(text: str) -> str:
    """Short content hash of a candidate's DSL source (or a task file)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def run_record(identity: Mapping[str, Any] | None, candidates: Sequence[Candidate]) -> dict[str, Any]:
    """The full record: the caller's fields plus ``candidates`` = {name: source hash},
    normalised through JSON so it compares equal to a stored copy."""
    record = dict(identity or {})
    record["candidates"] = {c.name: source_hash(c.source) for c in candidates}
    return json.loads(json.dumps(record, default=str))


def write_run_file(run_dir: Path, record: Mapping[str, Any], **extra: Any) -> None:
    """``run.json``: the record (``identity``) and where its trials are (``extra``)."""
    path = run_dir / RUN_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"identity": record, **extra}, indent=2, default=str) + "\n")
    tmp.replace(path)


def read_run_file(run_dir: Path) -> dict[str, Any] | None:
    """The record in ``run.json``, None when there is none; ValueError when it is damaged."""
    path = run_dir / RUN_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        record = data["identity"]
        if not isinstance(record, dict):
            raise TypeError("identity is not an object")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is damaged ({type(e).__name__}: {e})") from None
    return record


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between a stored record and the current one, one phrase per field."""
    out = []
    for key in sorted((set(old) | set(new)) - {"candidates"}):
        if old.get(key) != new.get(key):
            out.append(f"{key} {_show(old.get(key))} -> {_show(new.get(key))}")
    was, now = dict(old.get("candidates") or {}), dict(new.get("candidates") or {})
    added = sorted(set(now) - set(was))
    removed = sorted(set(was) - set(now))
    changed = sorted(n for n in set(was) & set(now) if was[n] != now[n])
    if added:
        out.append("candidates added: " + ", ".join(added))
    if removed:
        out.append("candidates removed: " + ", ".join(removed))
    if changed:
        out.append("candidate sources changed: " + ", ".join(changed))
    return out


def _show(value: Any) -> str:
    """Shapes as 4096x4096, nothing as (none), everything else as JSON."""
    if value is None:
        return "(none)"
    if isinstance(value, list) and all(isinstance(s, list) for s in value):
        return "[" + ", ".join("x".join(map(str, s)) or "()" for s in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)


def check_resume(storage: BaseStorage, storage_url: str | None, study_name: str, run_dir: Path,
                 record: Mapping[str, Any], existing: set[str], resume: bool) -> None:
    """Refuse to start over a run's trials, to resume nothing, or to resume a run that
    measured something else; ``existing``: the study names in ``storage``."""
    prefix = f"{study_name}::"
    st = storage
    ids = {n[len(prefix):]: st.get_study_id_from_name(n) for n in sorted(existing)
           if n.startswith(prefix)}
    n_trials = sum(st.get_n_trials(i) for i in ids.values())
    where = f"storage {redact(storage_url)}" if storage_url else "the given storage"
    try:
        from_file = read_run_file(run_dir)
    except ValueError as e:
        raise SearchSetupError(f"cannot tell what this run measured: {e}") from None
    if not resume:
        if n_trials:
            raise SearchSetupError(
                f"study {study_name!r} already has {n_trials} trials in {where}: "
                f"continue it with --resume (resume=True), or start a new run elsewhere "
                f"(another --out or --study)")
        return
    if n_trials == 0:
        hint = (f"; {run_dir / RUN_FILE} records a run, so check that "
                f"--storage/--study are the ones it used" if from_file else "")
        raise SearchSetupError(
            f"nothing to resume: study {study_name!r} has no trials in {where}{hint}")
    stored = None
    for sid in ids.values():
        stored = st.get_study_user_attrs(sid).get(STUDY_ATTR)
        if stored:
            break
    if stored is None and from_file is None:
        raise SearchSetupError(
            f"cannot resume study {study_name!r}: its trials carry no record of the task, "
            f"shapes, SoC and candidates they measured (made by an older ascendcraft), so "
            f"they could be mixed with different ones; start a new run")
    diffs: list[str] = []
    for old in (stored, from_file):
        if old is None:
            continue
        old = dict(old)
        # a candidate with a study in storage belongs to the run even if unrecorded
        old["candidates"] = {**{n: "?" for n in ids}, **dict(old.get("candidates") or {})}
        diffs += [d for d in differences(old, record) if d not in diffs]
    if diffs:
        raise SearchSetupError(
            f"cannot resume study {study_name!r}: it was recorded with a different "
            f"setup ({'; '.join(diffs)}); resume with the options it was started with, or "
            f"start a new run (another --out)")
