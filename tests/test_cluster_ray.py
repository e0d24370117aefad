"""RayExecutor on a local Ray instance (one per module: Ray takes seconds to start)."""

from __future__ import annotations

import time

import pytest
import test_search_toy
from ascendcraft.cluster.ray_executor import RayExecutor
from ascendcraft.search.driver import run_search
from ascendcraft.search.protocols import Finished
from optuna.trial import TrialState
from test_search_toy import EDGE, FAST, SLOW, ToyObjective, _key, toy_candidates

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_local():
    """A 2-CPU local Ray shared by this module's tests; executors join it, never stop it."""
    import ray.cloudpickle

    # the toy objective lives in tests/, which Ray workers cannot import: ship it by value
    ray.cloudpickle.register_pickle_by_value(test_search_toy)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=200 * 1024 * 1024)
    yield
    if started:
        ray.shutdown()


def _drain(ex: RayExecutor, n: int, limit_s: float = 60) -> dict[int, Finished]:
    out: dict[int, Finished] = {}
    deadline = time.monotonic() + limit_s
    while len(out) < n and time.monotonic() < deadline:
        for f in ex.poll(1.0):
            out[f.token] = f
    return out


def test_executor_ok_timeout_and_dead_worker(ray_local):
    ex = RayExecutor(2)
    ex.start()
    assert ex.capacity == 2 and not ex._started_ray  # joined the running instance
    obj = ToyObjective(hang_s=60, exit_in_worker=True)
    ex.submit(0, obj, FAST, FAST.default_params(), 30)
    ex.submit(1, obj, EDGE, {"mode": 2}, 3)  # hangs
    done = _drain(ex, 2)
    assert done[0].outcome.status == "ok" and done[0].eval_s >= 0 and done[0].worker
    # the hang stops itself (it is not computing), is run once more, then is a timeout
    assert done[1].outcome.status == "timeout" and "not computing" in done[1].outcome.message
    assert "both runs" in done[1].outcome.metrics["retried"]
    ex.submit(2, obj, EDGE, {"mode": 1}, 30)  # os._exit(1) in the worker, retried once
    ex.submit(3, obj, SLOW, SLOW.default_params(), 30)
    done = _drain(ex, 2)
    assert done[2].outcome.status == "crash" and "worker died" in done[2].outcome.message
    assert done[3].outcome.status == "ok"
    assert ex.in_flight() == 0
    ex.close()
    assert ray.is_initialized()  # not ours to stop


def test_run_search_on_two_workers(ray_local, tmp_path):
    obj = ToyObjective(hang_s=60, exit_in_worker=True)
    r = run_search(obj, [*toy_candidates(), EDGE], budget=16, run_dir=tmp_path, study_name="ray",
                   executor=RayExecutor(2), timeout_per_trial_s=4, plots=False,
                   n_init=4)
    assert r.evaluated == 16
    import optuna

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    keys, statuses = [], {}
    for c in [*toy_candidates(), EDGE]:
        study = optuna.load_study(study_name=f"ray::{c.name}", storage=storage)
        for t in study.trials:
            assert t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
            res = t.user_attrs["result"]
            if res.get("evaluated"):
                keys.append(_key(c.name, res["params"]))
                statuses[_key(c.name, res["params"])] = (t.user_attrs["status"], t.user_attrs["message"])
    assert len(keys) == len(set(keys)) == 16
    # EDGE got its 4 warm-up trials: the worker killer and the hang end as FAIL with reasons
    assert statuses[_key("toy/edge", {"mode": 1})][0] == "crash"
    assert "worker died" in statuses[_key("toy/edge", {"mode": 1})][1]
    assert statuses[_key("toy/edge", {"mode": 2})][0] == "timeout"
    assert r.best is not None and r.best.candidate == "toy/fast"
    assert r.times.evaluate_s > 0 and r.times.wait_s > 0


def test_every_status_and_its_message_survive_the_ray_executor(ray_local):
    """What a worker's objective returns is what the driver gets: ``dsl_error`` (once turned
    into "objective returned unknown status" by the executor) and every other status."""
    import ray.cloudpickle
    import test_status_flow
    from test_status_flow import CAND, EVALUATED, EveryStatus, _message

    ray.cloudpickle.register_pickle_by_value(test_status_flow)
    ex = RayExecutor(2)
    ex.start()
    for i in range(len(EVALUATED)):
        ex.submit(i, EveryStatus(), CAND, {"mode": i}, 30)
    done = _drain(ex, len(EVALUATED))
    ex.close()
    assert [(done[i].outcome.status, done[i].outcome.message) for i in range(len(EVALUATED))] == \
        [(s, _message(s)) for s in EVALUATED]


def test_a_signal_during_the_wait_is_an_interruption_not_a_lost_cluster(ray_local):
    """The driver's stop raised by a signal while Ray waits reaches the driver (which
    records the trials in flight as interrupted); it is not a crash of those trials."""
    import signal

    class Stop(BaseException):
        pass

    def _stop(signum, frame):
        raise Stop()

    ex = RayExecutor(2)
    ex.start()
    ex.submit(0, ToyObjective(delay_s=20), FAST, FAST.default_params(), 60)
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(Stop):
            ex.poll(10)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert ex.in_flight() == 1  # still known, for the driver to record as interrupted
    ex.close()



def test_a_local_instance_starts_without_the_token_auth_notice():
    """Ray's notice that a new local instance uses token authentication (its secure default,
    kept) is dropped; the warning that authentication is *disabled* still comes through."""
    import logging
    import os
    import subprocess
    import sys

    from ascendcraft.cluster.ray_executor import _QuietDefaultAuthNotice

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("ray", logging.WARNING, __file__, 1, msg, None, None)

    quiet = _QuietDefaultAuthNotice()
    assert not quiet.filter(record("Token authentication is enabled for this Ray cluster. Set"))
    assert quiet.filter(record("Token authentication is disabled for this Ray cluster. Anyone"))
    code = ("from ascendcraft.cluster.ray_executor import RayExecutor\n"
            "ex = RayExecutor(1)\nex.start()\nprint(ex.capacity)\nex.close()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=180, env={k: v for k, v in os.environ.items()
                                           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")})
    assert run.returncode == 0 and run.stdout.strip() == "1", run.stderr
    assert "Token authentication is enabled" not in run.stderr, run.stderr
