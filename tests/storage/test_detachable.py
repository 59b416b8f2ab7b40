"""``Detachable``: a coroutine awaited in the caller's task that finishes on its
own when the caller is cancelled (the write-through path relies on it)."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest

from stm_core.detach import Detachable

T = TypeVar("T")


async def test_value_and_errors_come_back_in_the_callers_own_task() -> None:
    caller = asyncio.current_task()
    loop = asyncio.get_running_loop()

    async def work(fail: bool) -> str:
        assert asyncio.current_task() is caller
        gate: asyncio.Future[str] = loop.create_future()
        loop.call_soon(gate.set_result, "done")
        await asyncio.sleep(0)
        value = await gate
        if fail:
            raise KeyError(value)
        return value

    assert await Detachable(work(False)) == "done"
    with pytest.raises(KeyError, match="done"):
        await Detachable(work(True))


async def test_a_cancelled_caller_leaves_the_work_running_to_its_end() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[int] = loop.create_future()
    steps: list[str] = []

    async def work() -> int:
        steps.append("started")
        value = await gate
        steps.append("after the wait")
        await asyncio.sleep(0)
        return value + 1

    running = Detachable(work())

    async def caller() -> int:
        return await running

    task = asyncio.create_task(caller())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not gate.cancelled()  # the work's own future was not touched
    assert running.detached is not None and steps == ["started"]
    gate.set_result(41)
    assert await running.detached == 42
    assert steps == ["started", "after the wait"]


async def test_cancelled_at_a_bare_yield_the_work_still_ends() -> None:
    done: list[bool] = []

    async def work() -> str:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        done.append(True)
        return "ok"

    running = Detachable(work())
    task = asyncio.create_task(_await(running))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert running.detached is not None
    assert await running.detached == "ok" and done == [True]


async def test_work_that_cancels_itself_is_not_detached() -> None:
    async def work() -> None:
        await asyncio.sleep(0)
        raise asyncio.CancelledError

    running = Detachable(work())
    with pytest.raises(asyncio.CancelledError):
        await running
    assert running.detached is None


async def test_cancelling_the_detached_task_reaches_the_work() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[None] = loop.create_future()
    cleaned: list[bool] = []

    async def work() -> None:
        try:
            await gate
            await loop.create_future()  # never settled
        finally:
            cleaned.append(True)

    running = Detachable(work())
    task = asyncio.create_task(_await(running))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert running.detached is not None
    gate.set_result(None)
    await asyncio.sleep(0.01)
    running.detached.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running.detached
    assert cleaned == [True]


async def _await(running: Detachable[T]) -> T:
    return await running
