"""The bundled transcript and the validation of transcripts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from stm_core.cli.demo.transcript import (
    BUNDLED_PATH,
    Transcript,
    load_transcript,
    parse_transcript,
)
from stm_core.errors import ValidationError


def bundled_data() -> dict[str, Any]:
    raw = BUNDLED_PATH.read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(raw)
    return data


def test_bundled_transcript_has_the_cast_the_demo_needs(transcript: Transcript) -> None:
    personas = list(transcript.personas.values())
    assert len({p.id for p in personas}) == len({p.lineage for p in personas}) == 2
    assert {p.provider for p in personas} == {"openai", "novelai"}
    servers = list(transcript.servers.values())
    assert [bool(s.categories) for s in servers].count(True) == 1
    threads = [c for c in transcript.channels.values() if c.parent is not None]
    assert threads and all(transcript.is_private(c) for c in threads)
    assert any(c.server is None for c in transcript.channels.values())
    campaign = [t for t in transcript.turns
                if t.channel == "campaign" and t.persona == "tomori"]
    assert len(campaign) >= 11


def test_a_transcript_file_loads_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(bundled_data()), encoding="utf-8")
    assert load_transcript(path).turns == load_transcript().turns


@pytest.mark.parametrize(("edit", "path"), [
    (lambda d: d["turns"][0].update(speaker="x"), "turns[0]"),
    (lambda d: d["turns"][3].update(channel="nowhere"), "turns[3].channel"),
    (lambda d: d["turns"][1]["messages"][0].update(user="ghost"), "turns[1].messages[0].user"),
    (lambda d: d["channels"]["appeal-ravenwood"].update(parent="table-talk"),
     "channels.appeal-ravenwood.parent"),
    (lambda d: d["servers"]["dice"].update(private_channels=["campaign"]),
     "servers.dice.private_channels"),
    (lambda d: d["personas"]["quill"].update(id="7001"), "personas.quill.id"),
    (lambda d: d["personas"]["quill"].update(has_tools="yes"), "personas.quill.has_tools"),
    (lambda d: d["turns"][0].update(after_minutes=-1), "turns[0].after_minutes"),
    (lambda d: d.update(start="yesterday"), "transcript.start"),
    (lambda d: d.update(format=2), "transcript.format"),
])
def test_a_broken_transcript_is_refused_naming_the_place(edit: Any, path: str) -> None:
    data = copy.deepcopy(bundled_data())
    edit(data)
    with pytest.raises(ValidationError) as caught:
        parse_transcript(data)
    assert caught.value.field == path
    assert path in str(caught.value)


def test_invalid_json_is_a_validation_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValidationError, match="not valid JSON"):
        load_transcript(path)
