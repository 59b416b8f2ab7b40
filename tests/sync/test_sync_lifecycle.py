"""``open_store_sync`` returns an open store, as ``sqlite3.connect`` does: use
it in a ``with`` block or keep it and ``close()`` it. Close is idempotent and
works from any thread; a closed store refuses every call with ``StoreClosed``;
a store never closed warns (``ResourceWarning``) when collected."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from stm_core import (
    ManualClock,
    Settings,
    StmError,
    StoreClosed,
    SyncStm,
    Turn,
    ValidationError,
    open_store_sync,
)

from .test_sync_facade import REPLY, said, turn


def open_sync(url: str, **kwargs: Any) -> SyncStm:
    kwargs.setdefault("load_entrypoints", False)
    kwargs.setdefault("settings", Settings())
    kwargs.setdefault("clock", ManualClock())
    return open_store_sync(url, **kwargs)


def loop_threads() -> int:
    return sum(t.name == "stm-sync-loop" for t in threading.enumerate())


def assert_refuses_every_call(stm: SyncStm) -> None:
    with pytest.raises(StoreClosed):
        stm.build_context(turn())
    with pytest.raises(StoreClosed):
        stm.record_window(turn(), said("late"), REPLY)
    with pytest.raises(StoreClosed):
        stm.admin.server_params("g1")
    with pytest.raises(StoreClosed):
        stm.run_janitor()
    with pytest.raises(StoreClosed), stm:
        pass


def test_an_explicit_lifecycle_open_use_close(db_url: str) -> None:
    before = loop_threads()
    stm = open_sync(db_url)  # the host guide's start-up
    assert isinstance(stm, SyncStm) and not stm.closed and loop_threads() == before + 1
    assert stm.admin.set_server_params("g1", refresh_cadence=3).refresh_cadence == 3
    stm.record_window(turn(), said("hello"), REPLY)
    stm.close()  # and exit
    assert stm.closed and loop_threads() == before
    assert_refuses_every_call(stm)
    # What it wrote was committed: a store opened afterwards reads it.
    again = open_sync(db_url)
    try:
        assert again.admin.server_params("g1").refresh_cadence == 3
    finally:
        again.close()


def test_the_with_block_lifecycle_closes_on_exit(backend_url: str) -> None:
    before = loop_threads()
    with open_sync(backend_url) as stm:
        assert stm.build_context(turn()).memory_items == ()
        assert loop_threads() == before + 1
    assert stm.closed and loop_threads() == before
    assert_refuses_every_call(stm)


def test_the_with_block_closes_on_an_error_too() -> None:
    with pytest.raises(RuntimeError, match="host bug"), open_sync("memory://") as stm:
        raise RuntimeError("host bug")
    assert stm.closed


def test_close_twice_and_close_after_the_with_block() -> None:
    stm = open_sync("memory://")
    stm.close()
    stm.close()
    with open_sync("memory://") as other:
        pass
    other.close()
    assert stm.closed and other.closed


def test_close_from_another_thread() -> None:
    before = loop_threads()
    stm = open_sync("memory://")
    stm.build_context(turn())
    closer = threading.Thread(target=stm.close)
    closer.start()
    closer.join()
    assert stm.closed and loop_threads() == before
    assert_refuses_every_call(stm)


def test_many_threads_closing_at_once_close_it_once() -> None:
    before = loop_threads()
    stm = open_sync("memory://")
    barrier = threading.Barrier(6)

    def close() -> None:
        barrier.wait()
        stm.close()

    with ThreadPoolExecutor(6) as pool:
        for future in [pool.submit(close) for _ in range(6)]:
            future.result()  # none raises
    assert stm.closed and loop_threads() == before


def test_close_from_inside_its_own_loop_is_refused() -> None:
    with open_sync("memory://") as stm:
        async def close_inside() -> None:
            stm.close()

        with pytest.raises(StmError, match="inside its own event loop"):
            stm.run(close_inside())
        assert not stm.closed and stm.build_context(turn()).memory_items == ()


def test_a_forgotten_store_warns_and_is_closed_when_collected() -> None:
    before = loop_threads()
    stm = open_sync("memory://")
    stm.build_context(turn())
    with pytest.warns(ResourceWarning, match="unclosed <SyncStm open>"):
        del stm
        gc.collect()
    assert loop_threads() == before


def test_a_closed_store_is_collected_without_a_warning(recwarn: pytest.WarningsRecorder) -> None:
    stm = open_sync("memory://")
    stm.close()
    del stm
    gc.collect()
    assert [w for w in recwarn if w.category is ResourceWarning] == []


@pytest.mark.parametrize(("url", "kwargs", "field"), [
    (123, {}, "url"),
    ("memory://", {"settings": "strict"}, "settings"),
    ("memory://", {"plugins": 5}, "plugins"),
])
def test_wrong_types_at_open_are_typed_errors_and_leave_no_thread(
        url: Any, kwargs: dict[str, Any], field: str) -> None:
    before = loop_threads()
    with pytest.raises(ValidationError, match=field):
        open_sync(url, **kwargs)
    assert loop_threads() == before


def test_wrong_types_in_calls_are_the_async_apis_errors() -> None:
    with open_sync("memory://") as stm:
        with pytest.raises(ValidationError, match="turn must be a Turn"):
            stm.build_context("turn")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="refresh_cadence"):
            stm.admin.set_server_params("g1", refresh_cadence="3")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="server_id"):
            stm.admin.server_params(["g1"])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            stm.admin.server_params("g1", "extra")  # type: ignore[misc]
        assert isinstance(stm.build_context(Turn(user_id="u1", channel_id="c1")).memory_items,
                          tuple)
