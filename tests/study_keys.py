"""``evaluated_keys``: what a run's SQLite study store says was evaluated, one
(study, params) key per evaluated trial, asserting on the way that every trial ended.
The campaign and bench kill-and-resume tests use it to show nothing was lost or redone."""

from __future__ import annotations

from pathlib import Path

import optuna


def evaluated_keys(db: Path) -> list[tuple[str, tuple]]:
    keys = []
    for s in optuna.get_all_study_summaries(storage=f"sqlite:///{db}"):
        study = optuna.load_study(study_name=s.study_name, storage=f"sqlite:///{db}")
        for t in study.trials:
            assert t.state.is_finished(), (db, t)
            res = t.user_attrs.get("result") or {}
            if res.get("evaluated"):
                keys.append((s.study_name, tuple(sorted(res["params"].items()))))
    return keys
