"""The fake gateway's transport compression reads back message by message,
for both streams Discord offers, and discord.py's own decompression context
reads the stream it asks for."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

import discord.utils
import pytest
import zstandard
from aiohttp import web

from stm_discord.testing.fake_discord import stream_compressor

MESSAGES = [{"op": 10, "d": {"heartbeat_interval": 45_000}},
            {"op": 0, "t": "READY", "s": 1, "d": {"v": 10, "text": "teal " * 200}},
            {"op": 11}]


def zlib_reader() -> Callable[[bytes], str]:
    stream = zlib.decompressobj()

    def read(data: bytes) -> str:
        assert data.endswith(b"\x00\x00\xff\xff")  # each message flushed whole
        return stream.decompress(data).decode()

    return read


def zstd_reader() -> Callable[[bytes], str]:
    stream = zstandard.ZstdDecompressor().decompressobj()
    return lambda data: stream.decompress(data).decode()


READERS = {"zlib-stream": zlib_reader, "zstd-stream": zstd_reader}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_each_message_reads_back_whole_with_the_stream_state_kept(kind: str) -> None:
    send, read = stream_compressor(kind), READERS[kind]()
    assert [json.loads(read(send(json.dumps(m).encode()))) for m in MESSAGES] == MESSAGES


def test_discord_py_reads_the_stream_it_asks_for() -> None:
    context = discord.utils._ActiveDecompressionContext()
    send = stream_compressor(context.COMPRESSION_TYPE)
    assert [json.loads(context.decompress(send(json.dumps(m).encode())) or "")
            for m in MESSAGES] == MESSAGES


def test_an_unknown_compression_is_refused() -> None:
    with pytest.raises(web.HTTPBadRequest):
        stream_compressor("brotli-stream")
