"""Exact token counts with ``tiktoken``, when the host has it installed.

Optional: without the package (or when its encoding cannot be loaded, e.g.
offline with no ``TIKTOKEN_CACHE_DIR``) this plugin abstains and the built-in
estimate counts. ``o200k_base`` is the encoding of OpenAI's current models; for
other providers it is a close stand-in, nearer than the estimate.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from hookspecs import hookimpl
from hookspecs.types import TokenCounter, byte_bounded

log = logging.getLogger("stm.tiktoken")

ENCODING = "o200k_base"


@functools.cache
def load_encoding(name: str = ENCODING) -> Any | None:
    """The tiktoken encoding, or ``None`` when tiktoken or its data is missing.

    Remembered for the process, a failure too: a host that is offline tries
    (and warns) once, not once per store.
    """
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a download that failed, a corrupt cache...
        # One short line: the resolver's own message runs to hundreds of characters.
        log.warning("tiktoken could not load its %s encoding (%s; offline? put the file in "
                    "TIKTOKEN_CACHE_DIR); counting tokens with the estimate", name,
                    type(exc).__name__)
        log.debug("loading the %s encoding failed: %s", name, exc)
        return None


@hookimpl
def stm_token_counter() -> TokenCounter | None:
    encoding = load_encoding()
    if encoding is None:
        return None

    @byte_bounded  # byte-level BPE: every token is at least one byte
    def count(text: str) -> int:
        # Special-token text in a memory is plain text, never a control token.
        return len(encoding.encode(text, disallowed_special=()))

    return count
