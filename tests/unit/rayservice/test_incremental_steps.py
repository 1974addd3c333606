"""The incremental upgrade's step rules replayed on the reference's worked examples (§6, §7.2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controllers.rayservice.incremental_steps import (
    Progress,
    capacity_step,
    capacity_update_needed,
    next_traffic_step_at,
    rollback_complete,
    should_promote,
    traffic_step,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def one_pass(
    p: Progress, now: datetime, *, surge: int, step: int, interval: int, rollback: bool = False
) -> bool:
    """KubeRay's order in one reconcile: capacity of B, then A, then traffic, then status. True: promoted."""
    for side in ("pending", "active"):
        if capacity_update_needed(p, rollback=rollback):
            new = capacity_step(side, p, surge=surge, rollback=rollback)  # type: ignore[arg-type]
            if new is not None:
                if side == "pending":
                    p.pending_tc = new
                else:
                    p.active_tc = new
    aw, pw = traffic_step(p, step=step, interval=interval, now=now, pending_ready=True, rollback=rollback)
    if aw != p.active_trp:
        p.active_trp, p.active_ltmt = aw, now
    if pw != p.pending_trp:
        p.pending_trp, p.pending_ltmt = pw, now
    return not rollback and should_promote(p)


def run(p: Progress, start: int, end: int, **kw: int) -> dict[int, tuple[int | None, ...]]:
    """Reconciles every 2 s from ``start`` to ``end``; the state after each pass by time."""
    seen: dict[int, tuple[int | None, ...]] = {}
    for t in range(start, end + 1, 2):
        promoted = one_pass(p, T0 + timedelta(seconds=t), **kw)  # type: ignore[arg-type]
        seen[t] = (p.active_tc, p.pending_tc, p.active_trp, p.pending_trp)
        if promoted:
            break
    return seen


def started() -> Progress:
    """At t = 0 B's backend was added with weight 0 (pLTMT = 0); B's head is Ready from t = 20."""
    return Progress(
        active_tc=100, pending_tc=0, active_trp=100, pending_trp=0, active_ltmt=T0, pending_ltmt=T0
    )


def test_worked_example_max_surge_50() -> None:
    seen = run(started(), 20, 80, surge=50, step=25, interval=10)
    # (aTC, pTC, A weight, B weight) at the times of the reference's table (one pass later than
    # "B apps RUNNING at 24" here, since the model's B is ready from its first pass).
    assert seen[20] == (100, 50, 75, 25)
    assert seen[30] == (100, 50, 50, 50)
    assert seen[32] == (50, 50, 50, 50)  # sum 150 > 100: A steps down
    assert seen[34] == (50, 100, 50, 50)  # sum 100: B steps up on the next pass
    assert seen[40] == (50, 100, 25, 75)
    assert seen[50] == (50, 100, 0, 100)
    last = max(seen)
    assert seen[last] == (0, 100, 0, 100) and last == 52  # A to 0, promotion in the same pass
    for a_tc, b_tc, _, _ in seen.values():
        assert (a_tc or 0) + (b_tc or 0) <= 150  # never above 100 + maxSurgePercent


def test_worked_example_max_surge_100_is_blue_green_with_gradual_traffic() -> None:
    seen = run(started(), 20, 80, surge=100, step=25, interval=10)
    assert seen[20] == (100, 100, 75, 25)
    assert seen[50] == (100, 100, 0, 100)
    assert seen[max(seen)] == (0, 100, 0, 100)


def test_traffic_waits_for_the_interval_and_for_pending_readiness() -> None:
    p = Progress(100, 50, 100, 0, T0, T0)
    assert traffic_step(
        p, step=25, interval=10, now=T0 + timedelta(seconds=9), pending_ready=True, rollback=False
    ) == (100, 0)
    assert traffic_step(
        p, step=25, interval=10, now=T0 + timedelta(seconds=10), pending_ready=False, rollback=False
    ) == (100, 0)
    assert traffic_step(
        p, step=25, interval=10, now=T0 + timedelta(seconds=10), pending_ready=True, rollback=False
    ) == (75, 25)
    assert next_traffic_step_at(p, interval=10, rollback=False) == T0 + timedelta(seconds=10)
    p.pending_trp = 50
    assert next_traffic_step_at(p, interval=10, rollback=False) is None  # waits on capacity, not time


def test_rollback_example() -> None:
    """§7.2: rolling back at t = 40 from aTC 50 / pTC 100 / weights 50/50 (aLTMT last set at t = 34)."""
    p = Progress(50, 100, 50, 50, T0 + timedelta(seconds=34), T0 + timedelta(seconds=34))
    one_pass(p, T0 + timedelta(seconds=40), surge=50, step=25, interval=10, rollback=True)
    assert (p.active_tc, p.pending_tc) == (100, 50)  # B first (150 > 100), then A (100 <= 100)
    assert (p.active_trp, p.pending_trp) == (50, 50)  # 6 s since aLTMT: traffic waits
    one_pass(p, T0 + timedelta(seconds=44), surge=50, step=25, interval=10, rollback=True)
    assert (p.active_trp, p.pending_trp) == (75, 25)
    one_pass(p, T0 + timedelta(seconds=54), surge=50, step=25, interval=10, rollback=True)
    assert (p.active_trp, p.pending_trp) == (100, 0)
    one_pass(p, T0 + timedelta(seconds=56), surge=50, step=25, interval=10, rollback=True)
    assert (p.active_tc, p.pending_tc) == (100, 0)
    assert rollback_complete(p, pending_healthy=True)
    assert not capacity_update_needed(p, rollback=True)


def test_completion_rules() -> None:
    assert should_promote(Progress(0, 100, 0, 100))
    assert not should_promote(Progress(50, 100, 0, 100))
    assert rollback_complete(Progress(100, 50, 100, 0), pending_healthy=False)
    assert not rollback_complete(Progress(100, 50, 100, 0), pending_healthy=True)
    assert capacity_update_needed(Progress(100, None, 100, None), rollback=False)
    assert not capacity_update_needed(Progress(0, 100, 0, 100), rollback=False)
