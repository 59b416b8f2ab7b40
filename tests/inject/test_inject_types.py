"""``inject`` has precise return types per format (checked with mypy itself)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

SNIPPET = """
from typing import Any
from google.genai import types
from stm_core.inject import inject
from stm_core.models import ContextItem, StmContext

ctx = StmContext()
chat: list[dict[str, Any]] = []
items: list[ContextItem] = []
contents: list[types.Content] = []
reveal_type(inject(chat, ctx))
reveal_type(inject(items, ctx, as_dicts=False))
reveal_type(inject(contents, ctx, format="gemini"))
reveal_type(inject(chat, ctx, format="anthropic"))
inject(chat, ctx, format="bedrock")
"""


def test_revealed_types(tmp_path: Path) -> None:
    source = tmp_path / "host.py"
    source.write_text(textwrap.dedent(SNIPPET))
    out, _err, _status = api.run([str(source), "--strict", "--no-incremental",
                                  "--ignore-missing-imports"])
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"')
                for line in out.splitlines() if "Revealed type" in line]
    assert revealed == [
        "list[dict[str, Any] | stm_core.inject.markers.StmMessage]",
        "list[stm_core.models.ContextItem]",
        "list[google.genai.types.Content | stm_core.inject.markers.StmMessage]",
        "list[dict[str, Any] | stm_core.inject.markers.StmMessage]",
    ], out
    # An unknown format key is a type error for the host, not only at run time.
    assert 'No overload variant of "inject" matches' in out
