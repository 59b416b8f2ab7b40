"""The guide's Matrix converter names users and rooms, as the guide says."""

import matrix_mentions
import pytest


async def test_the_guides_program_prints_names(capsys: pytest.CaptureFixture[str]) -> None:
    await matrix_mentions.main()
    assert capsys.readouterr().out == (
        "[System: Tomori's short term memory for this ongoing conversation:\n"
        "Bob asked to meet in the channel named `art`]\n")
