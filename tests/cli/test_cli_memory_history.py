"""``stm memory history``, ``undo`` and ``restore`` end to end."""

from __future__ import annotations

from .conftest import RunStm, ok, refused

WHERE = ("--server", "g1", "--channel", "c1", "--persona", "p1")


def test_history_undo_restore(stm_cli: RunStm) -> None:
    for text in ("The party met Bob at the gate.", "bob lol"):
        ok(stm_cli("memory", "edit", *WHERE, "--summary", text))
    shown = ok(stm_cli("memory", "history", *WHERE))
    assert "revision 2: admin" in shown.stdout and "(current)" in shown.stdout
    assert "+The party met Bob at the gate." in shown.stdout

    undone = ok(stm_cli("--json", "memory", "undo", *WHERE)).json()
    assert undone["snapshot"]["text"] == "The party met Bob at the gate."
    assert (undone["restored_from"], undone["rev"]) == (1, 3)

    history = ok(stm_cli("--json", "memory", "history", *WHERE)).json()
    assert [r["rev"] for r in history["revisions"]] == [3, 2, 1]
    assert history["revisions"][0]["restored_from"] == 1
    assert history["limit"] == 10

    restored = ok(stm_cli("memory", "restore", "2", *WHERE))
    assert "Restored revision 2 as revision 4." in restored.stdout
    assert "bob lol" in restored.stdout


def test_history_refusals(stm_cli: RunStm) -> None:
    assert "nothing to undo" in refused(stm_cli("memory", "undo", *WHERE))
    ok(stm_cli("memory", "edit", *WHERE, "--summary", "only"))
    assert "revision 7 is not kept" in refused(stm_cli("memory", "restore", "7", *WHERE))
    refused(stm_cli("memory", "restore", "seven", *WHERE))
    refused(stm_cli("memory", "history", "--channel", "c1"))
