"""The optional tiktoken counter: used when tiktoken and its encoding load,
the estimate otherwise. tiktoken downloads its BPE files on first use, so these
tests give it a small local encoding (one token per byte) instead."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import tiktoken

from stm_core.settings import Settings
from stm_core.store import Stm
from stm_plugins import tiktoken_counter
from stm_plugins.token_estimate import estimate_tokens
from tests.pipeline.support import ART, OpenStm, make_turn, other_text, server_key, write

BYTES = tiktoken.Encoding(name="bytes", pat_str=r"\S+|\s+",
                          mergeable_ranks={bytes([i]): i for i in range(256)},
                          special_tokens={})


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    tiktoken_counter.load_encoding.cache_clear()
    yield
    tiktoken_counter.load_encoding.cache_clear()


@pytest.fixture
def local_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def get_encoding(name: str) -> tiktoken.Encoding:
        assert name == tiktoken_counter.ENCODING
        return BYTES
    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)


@pytest.mark.usefixtures("local_encoding")
async def test_the_store_counts_with_tiktoken(stm: Stm) -> None:
    count = stm.hooks.token_counter("openai")
    assert count("héllo <|endoftext|>") == len("héllo <|endoftext|>".encode())
    assert count is stm.hooks.token_counter("openai")  # memoized


@pytest.mark.usefixtures("local_encoding")
async def test_the_budget_follows_tiktokens_count(open_stm: OpenStm, backend_url: str) -> None:
    # 400 ASCII characters: about 100 estimated tokens, 400 by the byte encoding.
    async with open_stm(backend_url, settings=Settings(prompt_budget_tokens=300)) as stm:
        await write(stm, server_key(ART), summary="x" * 400)
        assert other_text(await stm.build_context(make_turn(has_tools=False))) is None


async def test_the_budget_uses_the_estimate_without_tiktoken(
        open_stm: OpenStm, backend_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
    async with open_stm(backend_url, settings=Settings(prompt_budget_tokens=300)) as stm:
        await write(stm, server_key(ART), summary="x" * 400)
        assert stm.hooks.token_counter("openai") is estimate_tokens
        assert other_text(await stm.build_context(make_turn(has_tools=False))) is not None


async def test_an_encoding_that_cannot_load_falls_back_once(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def offline(name: str) -> Any:
        calls.append(name)
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with caplog.at_level(logging.WARNING, logger="stm.tiktoken"):
        assert stm.hooks.token_counter("openai") is estimate_tokens
        assert stm.hooks.token_counter("anthropic") is estimate_tokens
    assert calls == [tiktoken_counter.ENCODING]  # tried once for the process
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (f"tiktoken could not load its {tiktoken_counter.ENCODING} encoding "
                       "(ConnectionError; offline? put the file in TIKTOKEN_CACHE_DIR); "
                       "counting tokens with the estimate")


async def test_offline_the_warning_is_one_short_line_naming_the_cache_variable(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A resolver error is hundreds of characters long; the warning stays short."""
    resolver = ("HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', port=443): "
                "Max retries exceeded " + "x" * 300)

    def offline(name: str) -> Any:
        raise OSError(resolver)

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with caplog.at_level(logging.WARNING, logger="stm.tiktoken"):
        stm.hooks.token_counter("openai")
    [warning] = [r.getMessage() for r in caplog.records]
    assert "TIKTOKEN_CACHE_DIR" in warning and "\n" not in warning
    assert len(warning) < 160 and "openaipublic" not in warning
