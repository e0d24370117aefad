"""The progress line: what it shows, how often, on a terminal and in a log."""

from __future__ import annotations

import io

from ascendcraft.cluster.local import LocalExecutor
from ascendcraft.search import driver
from ascendcraft.search.progress import ProgressLine, eta_text, render
from ascendcraft.search.protocols import SearchProgress
from ascendcraft.search.space import CACHED_METRIC, TrialOutcome
from test_search_toy import ToyObjective, toy_candidates


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _p(done: int, budget: int = 20, best: float | None = 812.4, final: bool = False,
       **kw) -> SearchProgress:
    return SearchProgress(done, budget, best, "softmax/rows" if best else None,
                          kw.pop("failed", 1), kw.pop("infeasible", 0), final,
                          kw.pop("timing", "modeled"), kw.pop("cached", 0))


def test_eta_text():
    assert eta_text(None) == "?" and eta_text(float("nan")) == "?" and eta_text(-1) == "?"
    assert eta_text(0) == "0:00" and eta_text(59.6) == "1:00" and eta_text(125) == "2:05"
    assert eta_text(3 * 3600 + 61) == "3:01:01"


def test_render_shows_trials_best_failures_and_eta():
    line = render(_p(5, cached=2, infeasible=3), 42.0, bar=True)
    assert line.startswith("[#####---------------]  5/20 trials")
    assert "best 812.4 us modeled (softmax/rows)" in line
    assert "failed 1" in line and "infeasible 3" in line and "cached 2" in line
    assert line.endswith("ETA 0:42")
    bare = render(_p(0, best=None, failed=0), None, bar=False)
    assert bare == "0/20 trials  best -  failed 0  ETA ?"
    assert render(_p(20, final=True), None, bar=False).endswith("done")


def test_tty_line_is_redrawn_in_place_with_an_estimate(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the line is cut to the terminal's width; fix it here
    clock, out = FakeClock(), Tty()
    line = ProgressLine(out, clock=clock)
    assert line.tty
    line.update(_p(0, best=None))  # workers starting
    clock.t += 10.0
    line.update(_p(0, best=None))  # loop starts: the estimate's clock starts here
    clock.t += 4.0
    line.update(_p(2))
    assert "ETA 0:36" in out.getvalue().split("\r")[-1]  # 18 left at 2 s each
    written = out.getvalue()
    clock.t += 0.05
    line.update(_p(3))  # too soon after the last redraw: skipped
    assert out.getvalue() == written
    clock.t += 0.5
    line.update(_p(20, final=True))
    line.close()
    text = out.getvalue()
    assert text.count("\r") == 4 and "\n" not in text[:-1] and text.endswith("done\x1b[K\n")
    line.close()  # idempotent
    assert out.getvalue() == text


def test_plain_lines_when_not_a_terminal():
    clock, out = FakeClock(), io.StringIO()
    line = ProgressLine(out, clock=clock, every_s=15.0)
    assert not line.tty
    line.update(_p(0, best=None))
    for done in range(1, 11):
        clock.t += 2.0
        line.update(_p(done))
    line.update(_p(10, final=True))
    line.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "[" not in out.getvalue()
    # the first report, one 16 s later, and the final one
    assert [ln.split()[0] for ln in lines] == ["0/20", "8/20", "10/20"]
    assert lines[-1].endswith("done")


class CachedToy(ToyObjective):
    def evaluate(self, candidate, params, timeout_s) -> TrialOutcome:
        out = super().evaluate(candidate, params, timeout_s)
        if params.get("tile") == 8:
            out.metrics[CACHED_METRIC] = True
        return out


class Collect:
    def __init__(self) -> None:
        self.seen: list[SearchProgress] = []
        self.closed = 0

    def update(self, p: SearchProgress) -> None:
        self.seen.append(p)

    def close(self) -> None:
        self.closed += 1


def test_driver_feeds_the_sink(tmp_path):
    sink = Collect()
    driver.run_search(CachedToy(), toy_candidates(), executor=LocalExecutor(), budget=8,
                      run_dir=tmp_path / "run", progress=sink, plots=False)
    first, last = sink.seen[0], sink.seen[-1]
    assert first.done == 0 and not first.final
    assert last.final and last.done == 8 and last.budget == 8
    assert last.best_us is not None and last.timing == "modeled"
    assert last.cached >= 1  # toy/slow's default (tile 8) says it came from a cache
    assert [p.done for p in sink.seen] == sorted(p.done for p in sink.seen)
    assert sink.closed == 1
