"""Reading a server configuration document (docs/admin.md, "Export and import").

Each malformed shape is refused with a ``ValidationError`` whose ``field``
says which part is wrong and whose message says what was found, so
``stm config import`` can tell the operator what to fix.
"""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.admin.config_io import parse_document
from stm_core.errors import ValidationError

HEAD = {"format": "stm-server-config", "version": 1}


def refusal(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as refused:
        parse_document(data)
    return refused.value


@pytest.mark.parametrize("data", [["format"], "stm-server-config", None, 1])
def test_a_document_that_is_not_an_object_is_refused(data: object) -> None:
    error = refusal(data)
    assert (error.field, error.allowed) == ("config", "a JSON object")
    assert "must be a JSON object" in str(error)


@pytest.mark.parametrize("data", [{"version": 1}, {"format": "stm-config", "version": 1}])
def test_a_document_of_another_format_is_refused(data: dict[str, Any]) -> None:
    error = refusal(data)
    assert (error.field, error.allowed) == ("format", "stm-server-config")
    assert f"got {data.get('format')!r}" in str(error)


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_a_document_of_another_version_is_refused(version: object) -> None:
    data = {"format": "stm-server-config"} | ({} if version is None else {"version": version})
    error = refusal(data)
    assert (error.field, error.allowed) == ("version", "1")
    assert f"unsupported configuration version {version!r}; this stm reads version 1" \
        in str(error)


@pytest.mark.parametrize(("extra", "found"), [
    ({"memories": []}, r"extra fields found (memories) @ $"),
    ({"params": {"cadence": 3}}, r"extra fields found (cadence) @ $.params"),
    ({"params": {"refresh_cadence": "3"}}, "$.params.refresh_cadence"),
    ({"params": {"refresh_cadence": True}}, "$.params.refresh_cadence"),
    ({"prompts": {"nudge": 5}}, "$.prompts.nudge"),
    ({"categories": [{"label": "Goals"}]}, "$.categories[0].description"),
    ({"stm_enabled": "yes"}, "$.stm_enabled"),
    ({"privacy": {"bypass": 1}}, "$.privacy.bypass"),
])
def test_wrong_keys_and_types_are_refused_with_their_path(extra: dict[str, Any],
                                                          found: str) -> None:
    error = refusal(HEAD | extra)
    assert (error.field, error.allowed) == ("config", "the keys and types of an export")
    assert str(error).startswith("invalid server configuration: ")
    assert found in str(error)


def test_every_problem_is_listed() -> None:
    error = refusal(HEAD | {"params": {"cadence": 3}, "prompts": {"nudge": 5}})
    assert "$.params" in str(error) and "$.prompts.nudge" in str(error)
    assert "; " in str(error)


def test_missing_sections_mean_the_defaults() -> None:
    doc = parse_document(dict(HEAD))
    assert (doc.params.refresh_cadence, doc.prompts.nudge, doc.categories, doc.stm_enabled,
            doc.privacy.private_channel_ids, doc.privacy.bypass) == (None, None, [], None,
                                                                     [], False)
