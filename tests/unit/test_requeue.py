"""The kit's requeue timer: the earliest delay wins, ``immediately`` beats any delay."""

from __future__ import annotations

from controllers.common.requeue import Requeue
from kuberay_py.controller import Result


def test_no_request_relies_on_watches_or_the_default() -> None:
    assert Requeue().result() == Result()
    assert Requeue().result(default=300.0) == Result(requeue_after=300.0)


def test_the_earliest_delay_wins_whatever_the_order() -> None:
    timer = Requeue()
    for seconds in (30.0, 5.0, 60.0):
        timer.at(seconds)
    assert timer.result(default=300.0) == Result(requeue_after=5.0)


def test_a_past_deadline_is_a_tiny_delay_not_no_requeue() -> None:
    timer = Requeue()
    timer.at(-3.0)
    assert timer.result() == Result(requeue_after=0.001)


def test_immediately_beats_any_delay() -> None:
    timer = Requeue()
    timer.at(5.0)
    timer.immediately()
    assert timer.result() == Result(requeue=True)
