"""The optional tiktoken counter: used when tiktoken and its encoding's file is
in tiktoken's cache, the estimate otherwise. stm never lets tiktoken download
(it has no timeout), so these tests give it a small encoding of their own
(one token per byte, one merge), put in the cache as tiktoken would."""

from __future__ import annotations

import base64
import hashlib
import inspect
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public

from stm_core.settings import Settings
from stm_core.store import Stm
from stm_plugins import tiktoken_counter
from stm_plugins.tiktoken_counter import EncodingFile
from stm_plugins.token_estimate import estimate_tokens
from tests.pipeline.support import ART, OpenStm, make_turn, other_text, server_key, write

#: Never contacted: a load that tried would fail (nothing listens on port 9).
TINY_URL = "https://127.0.0.1:9/stm-tests/tiny.tiktoken"
TINY_RANKS = {**{bytes([i]): i for i in range(256)}, b"ab": 256}
TINY_PATTERN = r"\S+|\s+"


def tiny_file_bytes() -> bytes:
    """A valid ``.tiktoken`` file: base64 token and rank per line."""
    return b"".join(base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
                    for token, rank in TINY_RANKS.items())


TINY = EncodingFile(name="stm_tiny", url=TINY_URL,
                    sha256=hashlib.sha256(tiny_file_bytes()).hexdigest())


def put_in_cache(directory: Path, encoding: EncodingFile, data: bytes) -> Path:
    """Where tiktoken caches a download: the SHA-1 of its URL, in its cache directory."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / hashlib.sha1(encoding.url.encode()).hexdigest()
    path.write_bytes(data)
    return path


def tiktoken_builds_tiny(name: str) -> tiktoken.Encoding:
    """What a tiktoken plugin's constructor does: the ranks through tiktoken's
    own cached loader (it would download if the file were not in the cache)."""
    assert name == TINY.name
    ranks = tiktoken.load.load_tiktoken_bpe(TINY.url, expected_hash=TINY.sha256)
    return tiktoken.Encoding(name=name, pat_str=TINY_PATTERN, mergeable_ranks=ranks,
                             special_tokens={})


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty tiktoken cache of the test's own, and no remembered encoding."""
    cache = tmp_path / "tiktoken-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    tiktoken_counter.load_encoding.cache_clear()
    yield cache
    tiktoken_counter.load_encoding.cache_clear()


@pytest.fixture
def local_encoding(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put_in_cache(fresh_cache, TINY, tiny_file_bytes())
    monkeypatch.setattr(tiktoken_counter, "ENCODING_FILE", TINY)
    monkeypatch.setattr(tiktoken, "get_encoding", tiktoken_builds_tiny)


def test_the_encoding_file_is_the_one_tiktoken_loads() -> None:
    """stm's copy of the URL and checksum: tiktoken names that file for the encoding."""
    source = inspect.getsource(tiktoken_ext.openai_public.o200k_base)
    assert f'"{tiktoken_counter.O200K_BASE.url}"' in source
    assert f'expected_hash="{tiktoken_counter.O200K_BASE.sha256}"' in source
    assert tiktoken_counter.ENCODING == "o200k_base"


@pytest.mark.usefixtures("local_encoding")
async def test_the_store_counts_with_the_cached_encoding(stm: Stm) -> None:
    count = stm.hooks.token_counter("openai")
    assert count("héllo <|endoftext|>") == len("héllo <|endoftext|>".encode())
    assert count("abab") == 2  # the encoding's one merge: it is the cached file's
    assert count is stm.hooks.token_counter("openai")  # memoized


@pytest.mark.usefixtures("local_encoding")
async def test_the_budget_follows_tiktokens_count(open_stm: OpenStm, backend_url: str) -> None:
    # 400 ASCII characters: about 100 estimated tokens, 400 by the byte encoding.
    async with open_stm(backend_url, settings=Settings(prompt_budget_tokens=300)) as stm:
        await write(stm, server_key(ART), summary="x" * 400)
        assert other_text(await stm.build_context(make_turn(has_tools=False))) is None


@pytest.mark.parametrize("variable", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", None])
def test_the_cache_directory_is_found_by_tiktokens_rule(
        variable: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    if variable is None:  # the default: data-gym-cache in the temporary directory
        monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
        cache = tmp_path / "data-gym-cache"
    else:
        cache = tmp_path / variable
        monkeypatch.setenv(variable, str(cache))
    put_in_cache(cache, TINY, tiny_file_bytes())
    # tiktoken's own loader reads it from there, with nothing to download.
    assert tiktoken.load.load_tiktoken_bpe(TINY.url, expected_hash=TINY.sha256) == TINY_RANKS
    assert tiktoken_counter.cached_file(TINY) == cache / hashlib.sha1(TINY_URL.encode()).hexdigest()


def test_caching_turned_off_means_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would download on every load
    assert tiktoken_counter.cache_dir() is None
    assert tiktoken_counter.cached_file(TINY) is None


@pytest.mark.parametrize("data", [b"", b"IQ== 0\n", tiny_file_bytes()[:-1]])
def test_a_damaged_cached_file_is_not_handed_to_tiktoken(
        data: bytes, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """tiktoken deletes a file whose checksum is wrong and downloads it again."""
    path = put_in_cache(fresh_cache, TINY, data)
    monkeypatch.setattr(tiktoken_counter, "ENCODING_FILE", TINY)
    asked: list[str] = []
    monkeypatch.setattr(tiktoken, "get_encoding", asked.append)
    with caplog.at_level(logging.WARNING, logger="stm.tiktoken"):
        assert tiktoken_counter.load_encoding() is None
    assert asked == [] and path.read_bytes() == data
    assert "not in the cache" in caplog.text


async def test_the_budget_uses_the_estimate_without_tiktoken(
        open_stm: OpenStm, backend_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
    async with open_stm(backend_url, settings=Settings(prompt_budget_tokens=300)) as stm:
        await write(stm, server_key(ART), summary="x" * 400)
        assert stm.hooks.token_counter("openai") is estimate_tokens
        assert other_text(await stm.build_context(make_turn(has_tools=False))) is not None


async def test_an_encoding_missing_from_the_cache_falls_back_once_without_asking_tiktoken(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    asked: list[str] = []
    monkeypatch.setattr(tiktoken, "get_encoding", asked.append)
    with caplog.at_level(logging.WARNING, logger="stm.tiktoken"):
        assert stm.hooks.token_counter("openai") is estimate_tokens
        assert stm.hooks.token_counter("anthropic") is estimate_tokens
    assert asked == []  # tiktoken would have downloaded it
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (f"tiktoken could not load its {tiktoken_counter.ENCODING} encoding "
                       "(not in the cache; offline? put the file in TIKTOKEN_CACHE_DIR); "
                       "counting tokens with the estimate")


@pytest.mark.usefixtures("local_encoding")
async def test_a_cached_encoding_that_fails_to_load_falls_back_once(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A resolver error is hundreds of characters long; the warning stays short."""
    calls: list[str] = []
    resolver = ("HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', port=443): "
                "Max retries exceeded " + "x" * 300)

    def broken(name: str) -> Any:
        calls.append(name)
        raise OSError(resolver)

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    with caplog.at_level(logging.WARNING, logger="stm.tiktoken"):
        assert stm.hooks.token_counter("openai") is estimate_tokens
        assert stm.hooks.token_counter("anthropic") is estimate_tokens
    assert calls == [TINY.name]  # tried once for the process
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (f"tiktoken could not load its {TINY.name} encoding "
                       "(OSError; offline? put the file in TIKTOKEN_CACHE_DIR); "
                       "counting tokens with the estimate")
    assert len(warning) < 160 and "openaipublic" not in warning
