"""The search against a real PostgreSQL server (the cluster storage)."""

from __future__ import annotations

import optuna
import pytest
from ascendcraft.cluster import LocalExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.storage import sqlalchemy_url
from test_search_toy import ToyObjective, toy_candidates

try:
    from pg_server import PgServer, find_pg_bin
except ImportError:  # tests/ imported as a package
    from tests.pg_server import PgServer, find_pg_bin


@pytest.fixture(scope="module")
def pg_url():
    pytest.importorskip("psycopg2", reason="psycopg2 (extra 'postgres') is not installed")
    bin_dir = find_pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql)")
    server = PgServer(bin_dir)
    try:
        server.start()
        yield server.url
    finally:
        server.stop()


def test_study_on_postgres_and_resume(pg_url, tmp_path):
    kw = dict(run_dir=tmp_path, storage=pg_url, study_name="pg", executor=LocalExecutor(), plots=False)
    r = run_search(ToyObjective(), toy_candidates(), budget=8, **kw)
    assert r.evaluated == 8 and r.storage_url == pg_url
    assert not (tmp_path / "study.db").exists()
    obj = ToyObjective()
    r = run_search(obj, toy_candidates(), budget=12, resume=True, **kw)  # a bigger budget: 4 more
    assert r.evaluated == 12 and len(obj.calls) == 4
    names = optuna.get_all_study_names(sqlalchemy_url(pg_url))
    assert {"pg::toy/fast", "pg::toy/slow"} <= set(names)
    assert (tmp_path / "summary.json").exists()
