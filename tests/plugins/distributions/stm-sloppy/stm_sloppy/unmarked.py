"""A hook-named function without @hookimpl: never called."""

from stm_core import hookimpl


def stm_nudge_template(provider: str, mode: str) -> str | None:
    return "[System: sloppy nudge]"


@hookimpl
def stm_annotation_patterns() -> list[str]:
    return [r"\[sloppy\]"]
