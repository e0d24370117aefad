"""The Ray executor on a real multi-node Ray cluster on this machine (``ray.cluster_utils``):
a worker node killed mid-run loses and duplicates no trial, and trials that need an NPU run
only on the node that offers one. One cluster for the module (nodes take seconds to start):
a head that runs nothing, two CPU workers (one is killed), and a node with ``NPU: 1``."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import test_search_toy
from ascendcraft.cluster.ray_executor import RayExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.space import Candidate, TrialOutcome
from optuna.trial import TrialState
from test_search_toy import FAST, SLOW, ToyObjective, _key

ray = pytest.importorskip("ray")


@dataclass
class NodeToy(ToyObjective):
    """The toy objective, slow enough to be caught mid-trial, writing the node each
    evaluation starts on to ``marker``; ``npu_for`` names candidates whose trials "profile
    on hardware" and so ask for an NPU."""

    npu_for: tuple[str, ...] = ()
    npu_amount: float = 1.0

    def resources(self, candidate: Candidate, params: dict[str, int]) -> dict[str, float]:
        return {"NPU": self.npu_amount} if candidate.name in self.npu_for else {}

    def evaluate(self, candidate: Candidate, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        node = ray.get_runtime_context().get_node_id()
        if self.marker:
            with open(self.marker, "a") as fh:
                fh.write(f"{node} {_key(candidate.name, params)}\n")
        out = super().evaluate(candidate, params, timeout_s)
        out.metrics = {**out.metrics, "node": node}
        return out


@pytest.fixture(scope="module")
def cluster():
    import ray.cloudpickle
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    for module in (test_search_toy, sys.modules[__name__]):  # tests/ is not importable there
        ray.cloudpickle.register_pickle_by_value(module)
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 100 * 1024 * 1024})
    nodes = {
        "cpu_a": c.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024),
        "cpu_b": c.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024),
        "npu": c.add_node(num_cpus=1, resources={"NPU": 1}, object_store_memory=80 * 1024 * 1024),
    }
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c, nodes
    ray.shutdown()
    c.shutdown()


def _trials(run_dir: Path, study: str, names: list[str]) -> list[tuple[str, object]]:
    import optuna

    storage = f"sqlite:///{run_dir / 'study.db'}"
    return [(n, t) for n in names
            for t in optuna.load_study(study_name=f"{study}::{n}", storage=storage).trials]


def test_profiling_trials_go_only_to_the_npu_node(cluster, tmp_path):
    c, nodes = cluster
    npu_id = nodes["npu"].node_id
    obj = NodeToy(delay_s=0.2, npu_for=("toy/slow",))
    ex = RayExecutor(address=c.address)
    r = run_search(obj, [FAST, SLOW], budget=12, run_dir=tmp_path, study_name="npu", executor=ex,
                   timeout_per_trial_s=30, plots=False, n_init=3)
    assert r.evaluated == 12
    where = {name: [] for name in ("toy/fast", "toy/slow")}
    for name, t in _trials(tmp_path, "npu", ["toy/fast", "toy/slow"]):
        res = t.user_attrs["result"]
        if res.get("evaluated"):
            assert t.user_attrs["status"] in ("ok", "build_error", "wrong")  # the toy's own
            where[name].append(res["metrics"]["node"])
            assert f"node {res['metrics']['node']}" in res["worker"]
    assert where["toy/slow"] and set(where["toy/slow"]) == {npu_id}
    assert where["toy/fast"]  # CPU trials ran too (anywhere with a CPU)

    # a trial asking for more than any node has fails at once, saying what is missing
    ex = RayExecutor(address=c.address)
    ex.start()
    ex.submit(0, NodeToy(npu_for=("toy/slow",), npu_amount=2), SLOW, SLOW.default_params(), 30)
    done = ex.poll(1.0)
    ex.close()
    assert [f.outcome.status for f in done] == ["crash"]
    assert "no node of the Ray cluster offers" in done[0].outcome.message
    assert "NPU: 2" in done[0].outcome.message and ray.is_initialized()


def test_a_worker_node_killed_mid_run_loses_and_duplicates_nothing(cluster, tmp_path):
    c, nodes = cluster
    victim = nodes["cpu_a"]
    marker = tmp_path / "started.txt"
    marker.touch()
    obj = NodeToy(delay_s=1.5, marker=str(marker))
    killed = threading.Event()

    def kill_when_busy() -> None:  # once a trial has started on the victim, kill its node
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if victim.node_id in marker.read_text():
                time.sleep(0.3)
                c.remove_node(victim, allow_graceful=False)
                killed.set()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    budget = 14
    r = run_search(obj, [FAST, SLOW], budget=budget, run_dir=tmp_path, study_name="kill",
                   executor=RayExecutor(address=c.address), timeout_per_trial_s=30,
                   plots=False, n_init=3)
    killer.join(5)
    assert killed.is_set()
    assert r.evaluated == budget
    evaluated = []
    for name, t in _trials(tmp_path, "kill", ["toy/fast", "toy/slow"]):
        assert t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
        res = t.user_attrs["result"]
        if res.get("evaluated"):
            evaluated.append((_key(name, res["params"]), t.user_attrs["status"],
                              res["metrics"].get("node")))
    keys = [k for k, _, _ in evaluated]
    assert len(keys) == len(set(keys)) == budget  # none lost, none twice
    # the trial caught on the dead node was run again elsewhere and ended ok
    started = [ln.split(" ", 1) for ln in marker.read_text().splitlines()]
    on_victim = {key for node, key in started if node == victim.node_id}
    finished_on = {str(k): node for k, _, node in evaluated}
    rerun = [k for k in on_victim if finished_on.get(k) not in (None, victim.node_id)]
    assert rerun, (on_victim, finished_on)
    # nothing ended as a crash: the node's loss was absorbed by the retry
    assert all(status in ("ok", "build_error", "wrong") for _, status, _ in evaluated)


def test_tune_joins_the_cluster_named_by_ray_address(cluster, tmp_path):
    """``ascendcraft tune --ray-address`` from another process: a real op's trials run on
    the cluster's worker nodes (the head offers no CPU), built into those nodes' cache."""
    import json
    import subprocess

    c, nodes = cluster
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "ascendcraft.cli", "tune", "--op", "relu", "--budget", "2",
           "--ray-address", c.address, "--out", str(out), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["trials"] == 2
    rows = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    alive = {n.node_id for n in nodes.values() if n.any_processes_alive()}
    ran_on = {r["worker"].rsplit(" ", 1)[-1] for r in rows if r["evaluated"]}
    assert ran_on and ran_on <= alive, (ran_on, alive)


def test_a_local_executor_starts_its_own_instance_beside_a_running_cluster(cluster):
    """With a Ray cluster already running on this machine and no address given (the user's
    ``ray start`` or another tuner), the executor starts an instance of its own: Ray's
    ``ray.init`` would otherwise join that cluster and refuse ``num_cpus``."""
    import os
    import subprocess

    code = ("from ascendcraft.cluster.ray_executor import RayExecutor\n"
            "ex = RayExecutor(1)\nex.start()\nprint(ex.capacity)\nex.close()\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=180, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "1", run.stderr[-2000:]
    assert "Started a local Ray instance" in run.stderr
