"""Suite-wide setup.

- The outcome cache is off unless a test turns it on (with its own file), so that no test
  reuses an outcome another run of the suite left in the user's cache.
- Under pytest-xdist (``.ci/run`` runs ``-n 2``) the tests are handed out in work units:
  each test module is one, so a module-scoped fixture (one corpus check feeding every
  corpus test, one multi-node Ray cluster for the cluster tests) is computed once, on one
  worker. The two Ray modules share a unit (two Ray clusters at once would fight over 2
  cores), the registry sweep is a unit of its own (it is as long as the rest of its
  module), and the longest units are handed out first so that no worker is left with a
  long one at the end. (xdist's own ``--dist loadgroup`` cannot do this on pytest 9: it
  renames node ids through an attribute pytest no longer reads.)
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("ASCENDCRAFT_OUTCOME_CACHE", "off")

#: work units that are not their module: test node id prefix -> unit
UNITS = {
    "tests/test_cluster_ray.py::": "ray",
    "tests/test_cluster_multinode.py::": "ray",
    "tests/test_graph_frontend.py::test_registry_sweep": "graph_frontend_registry",
}

#: the longest units first (from ``--durations`` on 2 idle cores: 50-150 s each); the rest
#: follow in collection order
LONGEST = ["graph_frontend_registry", "test_taskfiles_corpus", "test_graph_frontend",
           "test_taskfiles_wild", "test_campaign", "ray", "test_bench"]


def work_unit(nodeid: str) -> str:
    """The work unit of a test: its module's stem unless :data:`UNITS` names another."""
    for prefix, unit in UNITS.items():
        if nodeid.startswith(prefix):
            return unit
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the longest units first, each unit's tests in collection order
    (every worker collects, and all sort the same way, as xdist requires)."""
    if not hasattr(config, "workerinput"):
        return
    rank = {unit: i for i, unit in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))  # stable


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist installed, never called
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 - xdist's type
    """xdist's per-scope scheduler with :func:`work_unit` as the scope, in collection order
    (the order above), not re-sorted by the number of tests in a unit."""
    from xdist.scheduler import LoadScopeScheduling

    if not callable(getattr(LoadScopeScheduling, "_split_scope", None)):
        # the override point xdist's own LoadFileScheduling uses; if a future xdist drops
        # it, fall back to xdist's default scheduling (correct, only slower) and say so
        log("ascendcraft: xdist has no LoadScopeScheduling._split_scope; default scheduling")
        return None

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return WorkUnitScheduling(config, log)
