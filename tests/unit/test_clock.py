import asyncio

from kuberay_py.clock import FakeClock


async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = FakeClock()
    woke: list[str] = []

    async def sleeper(name: str, delay: float) -> None:
        await clock.sleep(delay)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper("late", 5)), asyncio.create_task(sleeper("early", 1))]
    await asyncio.sleep(0)
    await clock.advance(0.5)
    assert woke == []
    await clock.advance(4.5)
    assert woke == ["early", "late"]
    await asyncio.gather(*tasks)


async def test_fake_clock_wall_time_moves_with_monotonic_time() -> None:
    clock = FakeClock()
    before = clock.utcnow()
    await clock.advance(60)
    assert (clock.utcnow() - before).total_seconds() == 60
