"""A deterministic toy objective for the search tests (pure Python, no kernels).

Two real candidates with a known optimum, an infeasible region (UB capacity), assignments
that fail with a category, one that raises, one that hangs past the timeout, and optionally
one that kills its worker process.  Other test modules import it from here.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

from ascendcraft.search.space import Candidate, TrialOutcome, TunableSpec

POW2 = (8, 16, 32, 64, 128, 256)

FAST = Candidate(
    name="toy/fast",
    source="kernel fast(x) { tile = $tile; unroll = $unroll; depth = $depth }\n",
    tunables=(
        TunableSpec("tile", POW2, 16),
        TunableSpec("unroll", (1, 2, 4, 8), 1),
        TunableSpec("depth", (1, 2, 3), 1),
    ),
)
SLOW = Candidate(
    name="toy/slow",
    source="kernel slow(x) { tile = $tile; unroll = $unroll }\n",
    tunables=(TunableSpec("tile", POW2, 8), TunableSpec("unroll", (1, 2, 4), 1)),
)
EDGE = Candidate(
    name="toy/edge",
    source="kernel edge(x) { mode = $mode }\n",
    tunables=(TunableSpec("mode", (0, 1, 2, 3), 0),),
)
OPTIMUM = ("toy/fast", {"tile": 64, "unroll": 4, "depth": 2}, 10.0)


def toy_candidates(edge: bool = False) -> list[Candidate]:
    return [FAST, SLOW, EDGE] if edge else [FAST, SLOW]


def _key(name: str, params: dict[str, int]) -> tuple:
    return (name, tuple(sorted(params.items())))


@dataclass
class ToyObjective:
    """time = base * (1 + 0.3*dtile^2 + 0.2*dunroll^2 + 0.5*ddepth^2) in log2 space."""

    delay_s: float = 0.0
    hang_s: float = 30.0
    exit_in_worker: bool = False  # toy/edge mode=1 calls os._exit(1) instead of raising
    flaky: set = field(default_factory=set)  # keys whose revalidation is "wrong"
    calls: list = field(default_factory=list)  # in-process record of evaluations
    marker: str | None = None  # file that gets a line whenever an evaluation starts

    def feasible(self, candidate: Candidate, params: dict[str, int]) -> str | None:
        if params.get("tile", 0) * params.get("unroll", 1) > 512:
            return f"UB overflow: tile*unroll={params['tile'] * params['unroll']} > 512"
        return None

    def model_time(self, candidate: Candidate, params: dict[str, int]) -> float:
        if candidate.name == "toy/fast":
            base, t0, u0, d0 = 10.0, 64, 4, 2
        elif candidate.name == "toy/slow":
            base, t0, u0, d0 = 25.0, 32, 2, 1
        else:
            return 50.0
        dt = math.log2(params["tile"] / t0)
        du = math.log2(params["unroll"] / u0)
        dd = params.get("depth", d0) - d0
        return base * (1 + 0.3 * dt * dt + 0.2 * du * du + 0.5 * dd * dd)

    def evaluate(self, candidate: Candidate, params: dict[str, int], timeout_s: float) -> TrialOutcome:
        self.calls.append(_key(candidate.name, params))
        if self.marker:
            with open(self.marker, "a") as fh:
                fh.write(f"{candidate.name} {params}\n")
        if self.delay_s:
            time.sleep(self.delay_s)
        name = candidate.name
        if name == "toy/edge":
            mode = params["mode"]
            if mode == 1:
                if self.exit_in_worker:
                    os._exit(1)
                raise RuntimeError("toy kernel exploded")
            if mode == 2:
                time.sleep(self.hang_s)
            if mode == 3:
                return TrialOutcome("build_error", None, "modeled", "toy: tiling does not divide")
        if name == "toy/fast" and params["tile"] == 8 and params["unroll"] == 8:
            return TrialOutcome("build_error", None, "modeled", "toy: register spill")
        if name == "toy/fast" and params["tile"] == 256 and params["depth"] == 3:
            return TrialOutcome("wrong", None, "modeled", "toy: mismatch", {"max_abs_err": 0.5})
        t = self.model_time(candidate, params)
        return TrialOutcome(
            "ok", t, "modeled", "",
            {"eager_us": 40.0, "roofline_frac": min(1.0, 8.0 / t),
             "pipes": {"vector": min(1.0, 6.0 / t), "mte2": 0.5, "mte3": 0.2, "scalar": 0.05}},
        )

    def revalidate(self, candidate: Candidate, params: dict[str, int]) -> TrialOutcome:
        if _key(candidate.name, params) in self.flaky:
            return TrialOutcome("wrong", None, "modeled", "toy: wrong on fresh inputs")
        return TrialOutcome("ok", None, "modeled")


def test_toy_optimum_is_known():
    obj = ToyObjective()
    name, params, t = OPTIMUM
    best = min(
        (obj.model_time(c, p), c.name)
        for c in toy_candidates()
        for p in c.all_params()
        if obj.feasible(c, p) is None
    )
    assert best == (t, name)
    assert obj.evaluate(FAST, params, 1.0).time_us == t


def test_toy_infeasible_region():
    obj = ToyObjective()
    assert obj.feasible(FAST, {"tile": 256, "unroll": 4, "depth": 1})
    assert obj.feasible(FAST, FAST.default_params()) is None
