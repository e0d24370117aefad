"""StopSignals nest: a campaign's handlers around each unit's search. A signal the inner
search notes after its last safe point must reach the outer one, not vanish."""

from __future__ import annotations

import signal

import pytest
from ascendcraft.search.stop import Stop, StopSignals


def _installed() -> tuple[StopSignals, StopSignals]:
    outer, inner = StopSignals(), StopSignals()
    outer.install()
    inner.install()
    return outer, inner


def test_a_signal_noted_late_by_the_inner_search_reaches_the_outer_one():
    before = signal.getsignal(signal.SIGINT)
    outer, inner = _installed()
    try:
        signal.raise_signal(signal.SIGINT)  # outside any interruptible section: noted only
        assert inner.requested and not outer.requested
        inner.restore()  # the inner search finished without another check
        assert signal.getsignal(signal.SIGINT) == outer._handle
        assert outer.requested and outer.name == "SIGINT"
        with pytest.raises(Stop):
            outer.check()
    finally:
        outer.restore()
    assert signal.getsignal(signal.SIGINT) == before


def test_the_outer_one_keeps_its_own_first_signal():
    outer, inner = _installed()
    try:
        outer.signum = signal.SIGTERM
        signal.raise_signal(signal.SIGINT)
        inner.restore()
        assert outer.name == "SIGTERM"
    finally:
        outer.restore()


def test_an_armed_inner_section_raises_at_once_and_still_tells_the_outer_one():
    outer, inner = _installed()
    try:
        with pytest.raises(Stop), inner.interruptible():
            signal.raise_signal(signal.SIGINT)
        inner.restore()
        assert outer.requested  # its caller raises its own Stop too; noting it is harmless
    finally:
        outer.restore()


def test_a_second_signal_goes_past_the_inner_search_to_the_outer_handler():
    outer, inner = _installed()
    try:
        signal.raise_signal(signal.SIGINT)  # noted by the inner one
        signal.raise_signal(signal.SIGINT)  # inner gives up: delivered to the outer handler
        assert signal.getsignal(signal.SIGINT) == outer._handle
        assert outer.requested  # as its first signal, noted, not a KeyboardInterrupt
    finally:
        outer.restore()


def test_nothing_is_handed_on_without_a_signal():
    outer, inner = _installed()
    try:
        inner.restore()
        assert not outer.requested
        outer.check()  # no Stop
    finally:
        outer.restore()
