"""Where the threads of the process run while a sequential comparison runs.

A turn that hands its write to a thread and waits for it costs one wake-up
each way. When the thread sits on the event loop's CPU, a wake-up is a
context switch there; on the other CPU it is a cross-CPU wake-up of a CPU
that was idle, twice to three times as long on these machines. Linux keeps
each thread where it last ran, so which of the two a writer thread gets is a
matter of luck that lasts the run: two identical floors interleaved measured
98 and 196 µs a write, and ``record_ratio_sqlite`` moved between 1.2 and 1.9
from run to run on one commit. With every thread on one CPU both sides get
the same (the cheaper) wake-up, which is the strongest floor, and a
sequential turn loses nothing: it has no work to run in parallel.

:func:`across_cpus` is the other way to give both sides the same: the event
loop's thread on one CPU, every other thread on another, so every hop is a
cross-CPU wake-up (a busy host's usual case). A design with fewer hops per
turn gains there; the headline figures use :func:`one_cpu`, the stricter.

Threads started inside the block (a pool's, a checkpoint's) inherit the CPU
from the thread that starts them (:func:`across_cpus` moves them when asked
to, between blocks of turns); on leaving, every thread gets the CPUs the
process had back. Where the platform cannot pin threads, nothing is pinned.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator


def thread_ids() -> list[int]:
    """The kernel's ids of this process's threads (Linux), else none."""
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return []


def _pin(tid: int, cpus: set[int]) -> None:
    with contextlib.suppress(OSError, ValueError):  # the thread ended meanwhile
        os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def one_cpu() -> Iterator[int | None]:
    """Pin every thread to the lowest CPU the process may use; yields it
    (``None`` where threads cannot be pinned)."""
    if not hasattr(os, "sched_setaffinity") or not thread_ids():
        yield None
        return
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    for tid in thread_ids():
        _pin(tid, {cpu})
    try:
        yield cpu
    finally:
        for tid in thread_ids():
            _pin(tid, allowed)


@contextlib.contextmanager
def across_cpus() -> Iterator[Callable[[], None] | None]:
    """The calling thread (the event loop's) on the lowest CPU the process may
    use, every other thread on the next; yields a function that moves the
    threads started since onto that other CPU (``None``, and nothing pinned,
    with fewer than two CPUs or where threads cannot be pinned)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else set()
    main = threading.get_native_id()
    if len(allowed) < 2 or not thread_ids():
        yield None
        return
    loop_cpu, other_cpu = sorted(allowed)[:2]

    def place() -> None:
        for tid in thread_ids():
            _pin(tid, {loop_cpu} if tid == main else {other_cpu})

    place()
    try:
        yield place
    finally:
        for tid in thread_ids():
            _pin(tid, allowed)
