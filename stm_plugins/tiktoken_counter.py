"""Exact token counts with ``tiktoken``, when the host has it installed and its
encoding file is already on disk.

tiktoken downloads an encoding on first use, with no timeout: behind a proxy
that never answers, the first turn would hang. So stm never lets it download.
It asks tiktoken for the encoding only when the file is in tiktoken's own
cache, whole (its checksum matches, so tiktoken neither deletes nor fetches
it again). Otherwise this plugin abstains and the built-in estimate counts,
with one warning per process. A host fills the cache once, on a machine with
network access (see the host guide).

``o200k_base`` is the encoding of OpenAI's current models; for other providers
it is a close stand-in, nearer than the estimate.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import attrs

from hookspecs import hookimpl
from hookspecs.types import TokenCounter, byte_bounded

log = logging.getLogger("stm.tiktoken")


@attrs.frozen(kw_only=True)
class EncodingFile:
    """A tiktoken encoding and the file it is built from, as tiktoken names them."""

    #: The name ``tiktoken.get_encoding`` takes.
    name: str
    #: Where tiktoken downloads the file from: its cache file is named after it.
    url: str
    #: The SHA-256 tiktoken checks the file against.
    sha256: str


#: As ``tiktoken_ext.openai_public.o200k_base`` loads it.
O200K_BASE = EncodingFile(
    name="o200k_base",
    url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")

#: The encoding the counter uses.
ENCODING_FILE = O200K_BASE
ENCODING = O200K_BASE.name


def cache_dir() -> Path | None:
    """tiktoken's cache directory, by tiktoken's own rule (``tiktoken.load``);
    ``None`` when caching is turned off (``TIKTOKEN_CACHE_DIR=""``)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def cached_file(encoding: EncodingFile) -> Path | None:
    """The encoding's file in tiktoken's cache, when it is there and whole."""
    directory = cache_dir()
    if directory is None:
        return None
    path = directory / hashlib.sha1(encoding.url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == encoding.sha256 else None


def _fall_back(name: str, reason: str) -> None:
    # One short line: a resolver's own message runs to hundreds of characters.
    log.warning("tiktoken could not load its %s encoding (%s; offline? put the file in "
                "TIKTOKEN_CACHE_DIR); counting tokens with the estimate", name, reason)


@functools.cache
def load_encoding(encoding: EncodingFile | None = None) -> Any | None:
    """The tiktoken encoding (by default :data:`ENCODING_FILE`), or ``None``
    when tiktoken or its cached file is missing.

    Never downloads. Remembered for the process, a failure too: a host that
    is offline warns once, not once per store.
    """
    try:
        import tiktoken
    except ImportError:
        return None
    encoding = encoding or ENCODING_FILE
    if cached_file(encoding) is None:
        _fall_back(encoding.name, "not in the cache")
        return None
    try:
        return tiktoken.get_encoding(encoding.name)
    except Exception as exc:  # an unreadable cache, a tiktoken without this encoding...
        _fall_back(encoding.name, type(exc).__name__)
        log.debug("loading the %s encoding failed: %s", encoding.name, exc)
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
