"""The benchmark harness runs end to end and writes every promised figure.

It runs ``python -m bench --tiny`` (a few seconds of real work on SQLite
files) into a temporary directory; timings are not asserted, only that each
scenario ran and reported what the results file promises.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADLINE_KEYS = ("build_ratio", "record_ratio", "record_ratio_sqlite", "turn_ratio_sqlite",
                 "record_ratio_postgres", "concurrent_throughput_ratio", "vs_langgraph_saver",
                 "vs_openai_session", "server_scale_ratio", "cpu_us_per_turn",
                 "bytes_per_turn", "scale_ratio", "janitor_writer_p99_ms",
                 "db_calls_per_warm_build")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, str]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, "-m", "bench", "--tiny", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (out / "results.json").exists(), proc.stderr[-4000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return results, out, proc.stderr


def test_every_scenario_runs_without_error(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, stderr = tiny_run
    assert "errors" not in results, (results.get("errors"), stderr[-4000:])


def test_results_carry_every_headline_key(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    missing = [k for k in HEADLINE_KEYS if k not in results]
    assert not missing
    for key in HEADLINE_KEYS:
        if key in ("record_ratio_postgres", "vs_langgraph_saver", "vs_openai_session"):
            continue  # may be null with a reason (no server, peer not installed)
        assert isinstance(results[key], int | float), key
    assert results["record_ratio"] == results["record_ratio_sqlite"]
    # Every timed tool call really wrote (a refused call would flatter the ratio).
    assert results["tool_write_failures"] == 0, results["tool_write_failure_examples"]


def test_skipped_figures_say_why(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    if results["record_ratio_postgres"] is None:
        assert results["record_ratio_postgres_skipped"]
    else:  # also against the upserts alone, without the change notice
        assert results["record_ratio_postgres_no_notice"] > 0
        assert results["scenarios"]["floor_asyncpg_statement_no_notice"]["n"] > 0
    for peer, key in (("langgraph", "vs_langgraph_saver"), ("openai", "vs_openai_session")):
        if results[key] is None:
            assert results["peers_unavailable"][peer]


def test_warm_build_makes_no_database_call_and_matches_the_floor(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    assert results["db_calls_per_warm_build"] == 0
    assert results["db_calls_cold_build"] > 0  # the counting proxy does see calls
    # The hand-written floor renders exactly stm's texts, or the ratio is meaningless.
    assert results["build_texts_equal"] is True, results["build_texts"]


def test_floors_do_the_same_work_and_report_cpu(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    # The whole-turn floor renders stm's texts, or turn_ratio_sqlite is meaningless.
    assert results["turn_texts"]["texts_equal"] is True, results["turn_texts"]
    floors = results["cpu_us_per_turn_floors"]
    assert {"floor_thread_turn", "floor_thread_record", "floor_inline_turn",
            "floor_inline_record"} <= set(floors)
    assert all(v > 0 for v in floors.values()), floors
    assert results["cpu_us_per_turn"] > 0
    assert isinstance(results["bimodal_floors"], list)
    for name in ("stm_turn_sqlite", "floor_thread_turn", "floor_thread_record",
                 "floor_inline_turn", "floor_inline_record", "floor_inline_tool_write"):
        stats = results["scenarios"][name]
        assert stats["cpu_us_per_turn"] > 0 and isinstance(stats["bimodal"], bool), name
    # stm's lone writes run on the caller's thread: it is also compared with
    # the floor that writes there.
    for key in ("record_ratio_sqlite_inline", "turn_ratio_sqlite_inline",
                "tool_write_ratio_sqlite_inline"):
        assert results[key] > 0, key
    # The sequential scenarios did measure the inline path, the concurrent
    # one the writer thread's group commit.
    assert results["writes_inline_share"] > 0.5
    assert results["peers_writes_inline_share"] > 0.5
    assert results["concurrent"]["writes_inline_share"] < 0.5
    # The group-commit floor did batch: fewer commits than turns.
    concurrent = results["concurrent"]
    assert concurrent["floor_batches"] < 2 * concurrent["tasks"] * concurrent["turns_per_task"]
    # The floor that batches best commits once per loop pass: fewer batches still.
    assert concurrent["best_floor_batches"] <= concurrent["floor_batches"]
    for key in ("concurrent_throughput_ratio_best", "concurrent_write_throughput_ratio_best",
                "concurrent_cpu_ratio_best"):
        assert results[key] > 0, key
    assert concurrent["stm_batches"] > 0
    # Every run's back-to-back ratio is reported, and the headline is their median.
    ratios = concurrent["turn_ratios"]
    assert len(ratios) == concurrent["runs"] and all(r > 0 for r in ratios)
    assert results["concurrent_throughput_ratio"] == round(statistics.median(ratios), 3)
    assert results["meta"]["load_averages_end"] is not None


def test_a_lone_caller_on_a_busy_loop_is_compared_with_the_issues_floor(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    """The loop had other callbacks ready all along, and stm's lone writes
    still ran on the caller's thread."""
    results, out, _ = tiny_run
    for key in ("busy_loop_turn_ratio", "busy_loop_turn_cpu_ratio", "busy_loop_record_ratio"):
        assert results[key] > 0, key
    assert results["busy_loop"]["unrelated_wakeups"] > results["meta"]["rounds"]
    assert results["busy_loop_writes_inline_share"] > 0.5
    for name in ("stm_turn_busy_loop", "floor_turn_busy_loop"):
        assert results["scenarios"][name]["cpu_us_per_turn"] > 0, name
    assert "busy_loop_turn_ratio" in {t["metric"] for t in results["targets"]}
    assert "a lone caller on a busy loop" in (out / "RESULTS.md").read_text(encoding="utf-8")


def test_peers_run_beside_the_floor_of_stms_turn(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    """The peers' floor renders stm's texts, so "peer ÷ floor" bounds what stm can score."""
    results, out, _ = tiny_run
    assert results["peers_floor_texts_equal"] is True
    assert results["scenarios"]["floor_inline_host_turn"]["cpu_us_per_turn"] > 0
    ran = [peer for peer, key in (("langgraph", "vs_langgraph_saver"),
                                  ("openai", "vs_openai_session")) if results[key] is not None]
    assert sorted(results["vs_peers_floor"]) == sorted(ran)
    assert all(results["vs_peers_floor"][peer] > 0 for peer in ran)
    assert sorted(results["vs_peers_floor_cpu"]) == sorted(ran)
    # The report's section comes with the peers (the bench extra installs them).
    section = "## Peers against stm and against the floor" in (out / "RESULTS.md").read_text(
        encoding="utf-8")
    assert section == bool(ran)


def test_scenarios_report_median_p95_p99(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    names = set(results["scenarios"])
    assert {"stm_build_crude_summary", "hand_build_supersede", "stm_record_turn_sqlite",
            "raw_aiosqlite_record", "stm_host_turn_sqlite"} <= names
    for stats in results["scenarios"].values():
        assert stats["n"] > 0
        assert 0 < stats["median_us"] <= stats["p95_us"] <= stats["p99_us"] <= stats["max_us"]


def test_targets_and_meta_describe_the_run(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, _, _ = tiny_run
    assert {t["metric"] for t in results["targets"]} >= {
        "build_ratio", "record_ratio_sqlite", "turn_ratio_sqlite", "server_scale_ratio",
        "concurrent_throughput_ratio", "janitor_writer_p99_ms"}
    assert all(t["met"] in (True, False, None) for t in results["targets"])
    meta = results["meta"]
    assert meta["mode"] == "tiny" and meta["quick"] is True
    assert meta["python"] and meta["sqlite"] and meta["date"] and meta["rounds"] == 1
    assert [p["rows"] for p in results["scale"]["points"]] == [200, 1000]
    assert results["janitor"]["rows_after"] < results["janitor"]["rows_before"]
    # The small and the large server's builds do the same work.
    assert results["server_scale"]["texts_equal"] is True


def test_the_floors_of_the_mix_issue_are_targets_with_cpu_twins(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, out, _ = tiny_run
    rows = {t["metric"]: t for t in results["targets"]}
    text = (out / "RESULTS.md").read_text(encoding="utf-8")
    for key, cpu_key in (("concurrent_throughput_ratio_best", "concurrent_cpu_ratio_best"),
                         ("record_ratio_postgres", "record_cpu_ratio_postgres"),
                         ("busy_loop_turn_ratio", "busy_loop_turn_cpu_ratio")):
        row = rows[key]
        assert row["value"] == results[key] and row["cpu_ratio"] == results.get(cpu_key)
        assert f"| `{key}` |" in text
        if results[key] is not None:
            assert row["met"] in (True, False) and row["cpu_ratio"] is not None
    # The floor without the change notice is reported, never held as a target.
    assert "record_ratio_postgres_no_notice" not in rows
    if results.get("record_ratio_postgres_no_notice") is not None:
        assert "`record_ratio_postgres_no_notice` " in text


def test_markdown_is_generated_from_the_same_run(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, out, _ = tiny_run
    text = (out / "RESULTS.md").read_text(encoding="utf-8")
    assert results["meta"]["date"] in text
    for key in ("build_ratio", "record_ratio_sqlite", "turn_ratio_sqlite",
                "server_scale_ratio", "janitor_writer_p99_ms", "scale_ratio"):
        assert f"`{key}`" in text
    assert "## The floors" in text


def test_concurrency_runs_measure_each_pair_back_to_back() -> None:
    from bench.scenarios_record import PAIRS, pair_order, paired_ratios

    firsts: list[str] = []
    for run in range(4):
        order = pair_order(run)
        assert sorted(order) == sorted(name for group in PAIRS for name in group)
        # stm stands next to each of its floors.
        for ours, *floors in PAIRS:
            for floor in floors:
                assert abs(order.index(ours) - order.index(floor)) == 1, order
        firsts.append(order[0])
    # Over four runs each floor of each group goes first, and each group leads.
    assert {"floor_turns", "best_floor_turns", "floor_writes", "best_floor_writes"} == set(
        firsts)
    assert paired_ratios([(10.0, 4.0), (6.0, 2.0)], [(5.0, 2.0), (3.0, 4.0)]) == [2.0, 2.0]
    assert paired_ratios([(10.0, 4.0)], [(5.0, 2.0)], index=1) == [2.0]


def test_the_collector_watch_counts_passes_only_while_entered() -> None:
    import gc

    from bench.scenarios_record import CollectorWatch

    with CollectorWatch() as watch:
        gc.collect()
        gc.collect(0)
    gc.collect()
    assert watch.passes == 2
    assert watch.seconds > 0
    assert watch._seen not in gc.callbacks


def test_the_turn_clock_only_moves_forward() -> None:
    from bench import workload as w
    from bench.scenarios_record import stamp
    from stm_core._util.clock import ManualClock

    clock = ManualClock(w.EPOCH_MS)
    stamp(clock, 30)
    assert clock.now_ms() == w.EPOCH_MS + 30_000
    # The next scenario starts over at the block's first index: time goes on.
    stamp(clock, 5)
    assert clock.now_ms() == w.EPOCH_MS + 30_001
    stamp(clock, 40)
    assert clock.now_ms() == w.EPOCH_MS + 40_000


def test_out_of_order_writes_are_measured(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, out, _ = tiny_run
    place = results["out_of_order_place_us"]
    assert set(place) == {"behind_0", "behind_10", "behind_100", "behind_999"}
    assert all(us > 0 for us in place.values())
    for key in ("out_of_order_floor_us", "out_of_order_place_cpu_us", "out_of_order_ratio",
                "out_of_order_cpu_ratio"):
        assert set(results[key]) == set(place), key
        assert all(v is not None and v > 0 for v in results[key].values()), key
    assert "## Writes out of order" in (out / "RESULTS.md").read_text(encoding="utf-8")


def test_what_a_scenario_sets_aside_for_the_collector_is_given_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import gc

    from bench import scenarios_build
    from bench.config import make_config

    cfg = make_config("tiny", tmp_path)
    results = asyncio.run(scenarios_build.run(cfg))
    assert results["build_texts_equal"] is True
    assert gc.get_freeze_count() == 0

    async def broken(*_args: object) -> dict[str, Any]:
        assert gc.get_freeze_count() > 0  # the prepared turns are set aside
        raise RuntimeError("scenario failed")

    monkeypatch.setattr(scenarios_build, "_run", broken)
    with pytest.raises(RuntimeError):
        asyncio.run(scenarios_build.run(cfg))
    assert gc.get_freeze_count() == 0


def test_a_big_guilds_names_are_measured(tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, out, _ = tiny_run
    names = results["turn_names_us"]
    assert set(names) == {"turn_plain_names", "turn_name_map"}
    assert all(us > 0 for us in names.values())
    assert set(results["turn_names_cpu_us"]) == set(names)
    assert results["turn_names_ratio"] > 0 and results["turn_names_cpu_ratio"] > 0
    assert "## A big guild's names" in (out / "RESULTS.md").read_text(encoding="utf-8")


def test_a_host_turn_is_split_into_its_write_and_its_build(
        tiny_run: tuple[dict[str, Any], Path, str]) -> None:
    results, out, _ = tiny_run
    cpu = results["turn_split_cpu_us"]
    assert set(cpu) == {"stm_record", "stm_build", "floor_write", "floor_build"}
    assert all(us > 0 for us in cpu.values())
    wall = results["turn_split_wall_us"]
    assert set(wall) == set(cpu)
    # Both sides write a lone turn on the main thread (stm inline, the inline
    # floor): the main thread's CPU is read around a half that runs on it,
    # so it never exceeds the half's wall time (beyond the clocks' rounding).
    for half in cpu:
        assert 0.9 * cpu[half] <= wall[half], half
    assert results["turn_split_texts_equal"] is True
    assert results["turn_split_build_cpu_ratio"] == round(cpu["stm_build"] / cpu["floor_build"],
                                                          3)
    assert "## Where a host turn's CPU goes" in (out / "RESULTS.md").read_text(encoding="utf-8")


def test_the_out_of_order_floor_keeps_the_order_the_view_keeps() -> None:
    # The floor must do the view's job, or the ratio against it means nothing.
    import random

    from bench.scenarios_view import SortedFloor
    from stm_core.engine.cache import MemoryView
    from stm_core.storage.records import MemoryKey, MemoryRecord

    rng = random.Random(5)
    rows = [MemoryRecord(key=MemoryKey.server("g", f"c{n}", None), updated_at_ms=n * 10)
            for n in range(50)]
    view, floor = MemoryView(rows, max_rows=50), SortedFloor(rows)
    for rev in range(2, 300):
        key = MemoryKey.server("g", f"c{rng.randrange(50)}", None)
        written = MemoryRecord(key=key, updated_at_ms=rng.randrange(0, 600), rev=rev)
        view.apply(written)
        floor.apply(written)
        assert [r.key for r in view.oldest_first()] == floor.keys
