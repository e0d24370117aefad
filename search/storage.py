"""The study store: an Optuna storage opened from a URL, or a readable reason it cannot be.

SQLite in the run directory by default (WAL, so a killed process loses nothing committed);
any SQLAlchemy URL otherwise (PostgreSQL for runs shared between machines). A store that is
empty or damaged is never replaced, and a password in a URL is never printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optuna.storages import BaseStorage, RDBStorage

from .errors import SearchSetupError


def open_storage(storage: str | BaseStorage | None, run_dir: Path) -> tuple[BaseStorage, str | None]:
    """An Optuna storage for a URL (SQLite file in the run dir by default).

    A URL that names no usable database, a server that does not answer, and a store that is
    empty or damaged raise :class:`SearchSetupError`: a damaged store is never replaced."""
    if isinstance(storage, BaseStorage):
        return storage, None
    url = storage or f"sqlite:///{(run_dir / 'study.db').resolve()}"
    if url.startswith("sqlite") and _sqlite_file(url) is None:
        raise SearchSetupError(
            f"storage {url} is an in-memory SQLite database, which keeps nothing (and is not "
            f"shared between connections); give a file, e.g. sqlite:///study.db, or leave the "
            f"storage out for one in the run directory")
    db_file = _sqlite_file(url)
    if db_file is not None and db_file.is_file() and db_file.stat().st_size == 0:
        raise SearchSetupError(
            f"study store {db_file} is empty (0 bytes): it was truncated or damaged, and is not "
            f"replaced; move it away (or delete it) to start a new run there")
    try:
        if url.startswith("sqlite"):
            rdb = RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
            _tune_sqlite(rdb)
        else:
            rdb = RDBStorage(sqlalchemy_url(url), engine_kwargs={"pool_pre_ping": True})
    except Exception as e:  # noqa: BLE001 - SQLAlchemy, driver imports, Optuna schema checks
        raise store_error(url, e) from None
    return rdb, url


def _sqlite_file(url: str) -> Path | None:
    """The database file of a ``sqlite:///path`` URL (None for memory or other databases)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///"):].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def store_error(url: str | None, exc: BaseException) -> SearchSetupError:
    """One paragraph for a storage that cannot be used, by what went wrong."""
    import sqlalchemy.exc as sa

    where = redact(url) or "the given storage"
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    text = text.split(" (Background on this error", 1)[0].split(" [SQL:", 1)[0][:300]
    db_file = _sqlite_file(url or "")
    if isinstance(exc, (sa.NoSuchModuleError, sa.ArgumentError, ImportError)):
        why = (f"is not a usable database URL ({text}); give an SQLAlchemy URL such as "
               f"sqlite:///study.db or postgresql://user@host/db")
    elif db_file is not None and db_file.is_file() and isinstance(exc, sa.DatabaseError):
        why = (f"cannot be read as a study store ({text}): the file is damaged or is not an "
               f"SQLite database; it is not replaced - move it away to start a new run")
    elif db_file is not None and isinstance(exc, sa.OperationalError):
        why = f"cannot be opened ({text})"
    elif isinstance(exc, (sa.OperationalError, sa.InterfaceError)):
        why = f"cannot be reached ({text}); is the database server running and the URL right?"
    else:
        why = f"cannot be used as a study store ({type(exc).__name__}: {text})"
    return SearchSetupError(f"storage {where} {why}")


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to psycopg 3; use psycopg2 when only it is there."""
    import importlib.util

    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix) and importlib.util.find_spec("psycopg") is None \
                and importlib.util.find_spec("psycopg2") is not None:
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def _tune_sqlite(rdb: RDBStorage) -> None:
    """WAL + synchronous=NORMAL: commits stay atomic and survive a killed process, at a
    fraction of the fsync cost (only a power cut may lose the last trials)."""
    from sqlalchemy import event

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    event.listen(rdb.engine, "connect", on_connect)
    rdb.engine.dispose()  # reconnect so pooled connections get the pragmas


def redact(url: str | None) -> str | None:
    """The URL with its user and password replaced by ``***``."""
    if url and "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def finish_trial(storage: BaseStorage, trial_id: int, attrs: dict[str, Any], state: Any,
                 values: list[float] | None) -> None:
    """A RUNNING trial's user attributes and final state in ONE transaction on an RDB store
    (one commit instead of one per attribute and one for the state: the storage is most of
    the tuner's own time per trial); attribute by attribute on any other storage. Atomic
    either way on an RDB: a killed driver leaves the trial RUNNING (re-run by a resume),
    never half-written."""
    rdb = getattr(storage, "_backend", storage)  # Optuna wraps an RDBStorage in a cache
    one = _one_transaction(rdb) if isinstance(rdb, RDBStorage) else None
    if one is None:
        for k, v in attrs.items():
            storage.set_trial_user_attr(trial_id, k, v)
        storage.set_trial_state_values(trial_id, state, values)
        return
    scoped, models = one
    from datetime import datetime

    with scoped(rdb.scoped_session) as session:
        trial = models.TrialModel.find_or_raise_by_id(trial_id, session, for_update=True)
        rdb.check_trial_is_updatable(trial_id, trial.state)
        for k, v in attrs.items():
            rdb._set_trial_attr_without_commit(session, models.TrialUserAttributeModel, trial_id, k, v)
        for objective, v in enumerate(values or ()):
            rdb._set_trial_value_without_commit(session, trial, objective, v)
        trial.state = state
        if state.is_finished():
            trial.datetime_complete = datetime.now()


def _one_transaction(rdb: RDBStorage) -> tuple[Any, Any] | None:
    """Optuna's session scope and models when this Optuna has the pieces :func:`finish_trial`
    writes with (they are not public API), else None (the public calls are used)."""
    try:
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session
    except ImportError:
        return None
    needed = ("_set_trial_attr_without_commit", "_set_trial_value_without_commit", "check_trial_is_updatable")
    if not all(hasattr(rdb, n) for n in needed) or not hasattr(models, "TrialUserAttributeModel"):
        return None
    return _create_scoped_session, models
