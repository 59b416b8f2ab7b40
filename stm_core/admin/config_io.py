"""Export and import of a server's configuration as a JSON-able document.

The document holds the parameters, the prompt overrides, the categories, the
capability switch and the privacy settings; never per-channel memory. Stored
values are exported as they are (``null`` = "use the default"), so a default
stays a default on the server it is imported into.

Import parses with a private cattrs converter that forbids unknown keys and
refuses wrong types (no silent ``"5"`` -> ``5``), then validates every value
like the admin calls do, before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from stm_core.errors import ValidationError
from stm_core.storage.records import ServerSettings

if TYPE_CHECKING:
    import cattrs

FORMAT_NAME = "stm-server-config"
FORMAT_VERSION = 1


@attrs.frozen(kw_only=True)
class ParamsDoc:
    refresh_cadence: int | None = None
    render_mode: str | None = None
    crude_message_count: int | None = None
    nudge_injection_depth: int | None = None
    content_injection_depth: int | None = None
    cache_policy: str | None = None
    prompt_budget_tokens: int | None = None


@attrs.frozen(kw_only=True)
class PromptsDoc:
    tool_description: str | None = None
    nudge: str | None = None


@attrs.frozen(kw_only=True)
class CategoryDoc:
    label: str
    description: str


@attrs.frozen(kw_only=True)
class PrivacyDoc:
    private_channel_ids: list[str] = attrs.field(factory=list)
    bypass: bool = False


@attrs.frozen(kw_only=True)
class ServerConfigDoc:
    """One server's configuration. Missing sections mean "the defaults"."""

    format: str
    version: int
    #: The server it was exported from (informational; import ignores it).
    server_id: str | None = None
    params: ParamsDoc = attrs.field(factory=ParamsDoc)
    prompts: PromptsDoc = attrs.field(factory=PromptsDoc)
    #: Empty means the implicit default ``summary`` category.
    categories: list[CategoryDoc] = attrs.field(factory=list)
    stm_enabled: bool | None = None
    privacy: PrivacyDoc = attrs.field(factory=PrivacyDoc)


def _strict(kind: type[Any]) -> Any:
    def structure(value: Any, _: type[Any]) -> Any:
        # bool is an int subclass: refuse it where a number is expected.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value
    return structure


def _converter() -> cattrs.Converter:
    # Made per document: cattrs is slow to import and most commands never need
    # it, and a config import or export is rare enough not to keep one around.
    import cattrs

    converter = cattrs.Converter(forbid_extra_keys=True)
    for kind in (int, str, bool):
        converter.register_structure_hook(kind, _strict(kind))
    return converter


def export_document(stored: ServerSettings) -> dict[str, Any]:
    doc = ServerConfigDoc(
        format=FORMAT_NAME,
        version=FORMAT_VERSION,
        server_id=stored.server_id,
        params=ParamsDoc(
            refresh_cadence=stored.refresh_cadence,
            render_mode=stored.render_mode,
            crude_message_count=stored.crude_message_count,
            nudge_injection_depth=stored.nudge_injection_depth,
            content_injection_depth=stored.content_injection_depth,
            cache_policy=stored.cache_policy,
            prompt_budget_tokens=stored.prompt_budget_tokens,
        ),
        prompts=PromptsDoc(tool_description=stored.tool_description_override,
                           nudge=stored.update_nudge_override),
        categories=[CategoryDoc(label=c.label, description=c.description)
                    for c in stored.categories],
        stm_enabled=stored.stm_enabled,
        privacy=PrivacyDoc(private_channel_ids=sorted(stored.private_channel_ids),
                           bypass=stored.privacy_bypass),
    )
    result: dict[str, Any] = _converter().unstructure(doc)
    return result


def parse_document(data: object) -> ServerConfigDoc:
    """Structure ``data``; raise :class:`ValidationError` listing every problem
    with its JSON path (``extra fields found (x) @ $.params``)."""
    if not isinstance(data, dict):
        raise ValidationError("a server configuration must be a JSON object",
                              field="config", allowed="a JSON object")
    if data.get("format") != FORMAT_NAME:
        raise ValidationError(
            f"not a server configuration: format must be {FORMAT_NAME!r}, "
            f"got {data.get('format')!r}", field="format", allowed=FORMAT_NAME)
    if data.get("version") != FORMAT_VERSION:
        raise ValidationError(
            f"unsupported configuration version {data.get('version')!r}; this stm reads "
            f"version {FORMAT_VERSION}", field="version", allowed=str(FORMAT_VERSION))
    import cattrs

    try:
        return _converter().structure(data, ServerConfigDoc)
    except cattrs.BaseValidationError as exc:
        problems = cattrs.transform_error(exc, path="$")
        raise ValidationError("invalid server configuration: " + "; ".join(problems),
                              field="config", allowed="the keys and types of an export"
                              ) from None
