"""The default token counter (``trylast``): a fast estimate, no package needed.

About four characters of ASCII text make one token in the tokenizers of the
big providers; other scripts (CJK, emoji, accented text) take about one token
per character or more. Counting them so keeps the estimate on the high side,
so a block held to the budget by the estimate fits the real count too.
"""

from __future__ import annotations

from hookspecs import hookimpl
from hookspecs.types import TokenCounter, byte_bounded

ASCII_CHARS_PER_TOKEN = 4


@byte_bounded  # at most one token per character, so per UTF-8 byte
def estimate_tokens(text: str) -> int:
    if text.isascii():
        return -(-len(text) // ASCII_CHARS_PER_TOKEN)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // ASCII_CHARS_PER_TOKEN) + len(text) - ascii_chars


@hookimpl(trylast=True)
def stm_token_counter() -> TokenCounter:
    return estimate_tokens
