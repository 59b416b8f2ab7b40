"""No turn and no command waits on the network for tiktoken's encoding.

Behind a proxy that accepts connections and never answers, tiktoken's own
download waits forever (it sets no timeout). Here the proxy is a silent server
on loopback, tiktoken's cache is empty, and the host's ``build_context`` and
the ``stm context`` command run in fresh processes: both return in their
usual time, warn once, and never connect to the proxy.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.cli.conftest import stm_executable
from tests.plugins.test_tiktoken_counter import TINY, put_in_cache, tiny_file_bytes

ROOT = Path(__file__).resolve().parents[2]
#: A command or a build that waited on the network would run into this.
WAIT_LIMIT_S = 60
#: What one ``stm context`` or a short script takes, with room for a busy machine.
USUAL_TIME_S = 15
WARNING = "tiktoken could not load its o200k_base encoding (not in the cache"


class SilentServer:
    """Accepts connections on loopback and never answers; counts them."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:  # closed
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self._socket.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent_proxy() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def behind_the_proxy(silent_proxy: SilentServer, tmp_path: Path) -> dict[str, str]:
    """A process environment: every proxy variable at the silent server, an
    empty tiktoken cache."""
    proxy = f"http://127.0.0.1:{silent_proxy.port}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STM_", "SHORT_TERM_MEMORY_"))
           and k.lower() not in ("no_proxy", "data_gym_cache_dir")}
    cache = tmp_path / "empty-tiktoken-cache"
    cache.mkdir()
    env.update({"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy,
                "http_proxy": proxy, "ALL_PROXY": proxy, "TIKTOKEN_CACHE_DIR": str(cache),
                "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(ROOT)})
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str],
                                                                  float]:
    start = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=WAIT_LIMIT_S)
    return done, time.monotonic() - start


HOST = textwrap.dedent("""
    import asyncio, logging, sys
    from stm_core import Turn, open_store

    logging.basicConfig(level=logging.WARNING)

    async def main():
        for _ in range(2):  # a restarted host: a second store, the same process
            async with open_store(sys.argv[1], load_entrypoints=False) as stm:
                for channel in ("c1", "c2"):
                    await stm.build_context(Turn(server_id="g", channel_id=channel,
                                                 user_id="u", persona_id="p"))
        print("built")

    asyncio.run(main())
""")


def test_a_hosts_build_context_behind_a_silent_proxy_returns_and_warns_once(
        behind_the_proxy: dict[str, str], silent_proxy: SilentServer, tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST, encoding="utf-8")
    done, seconds = run([sys.executable, str(script), f"sqlite:///{tmp_path / 'bot.db'}"],
                        behind_the_proxy, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "built"
    assert seconds < USUAL_TIME_S
    assert done.stderr.count(WARNING) == 1, done.stderr
    assert silent_proxy.accepted == []  # nothing was downloaded, nor tried


def test_stm_context_behind_a_silent_proxy_returns_and_warns_once(
        behind_the_proxy: dict[str, str], silent_proxy: SilentServer, tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    stm = stm_executable()
    upgrade, _ = run([stm, "--db", db, "db", "upgrade"], behind_the_proxy, tmp_path)
    assert upgrade.returncode == 0, upgrade.stderr
    done, seconds = run([stm, "--db", db, "context", "--server", "g", "--channel", "c",
                         "--user", "u"], behind_the_proxy, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert seconds < USUAL_TIME_S
    assert (done.stdout + done.stderr).count(WARNING) == 1, done.stderr
    assert silent_proxy.accepted == []


PLUGIN = textwrap.dedent("""
    from tiktoken.load import load_tiktoken_bpe

    def stm_tiny():
        return {{"name": "stm_tiny", "pat_str": r"\\S+|\\s+", "special_tokens": {{}},
                 "mergeable_ranks": load_tiktoken_bpe({url!r}, expected_hash={sha256!r})}}

    ENCODING_CONSTRUCTORS = {{"stm_tiny": stm_tiny}}
""")

LOAD = textwrap.dedent("""
    import sys
    import attrs
    from stm_plugins import tiktoken_counter
    from tests.plugins.test_tiktoken_counter import TINY

    encoding = tiktoken_counter.load_encoding(attrs.evolve(TINY, url=sys.argv[1]))
    print(encoding.name, len(encoding.encode("abab")), len(encoding.encode("héllo")))
""")


def test_an_encoding_in_tiktokens_cache_is_loaded_by_tiktoken_itself(
        behind_the_proxy: dict[str, str], silent_proxy: SilentServer, tmp_path: Path) -> None:
    """A tiktoken plugin (``tiktoken_ext``) whose file would be downloaded from
    the silent server: stm finds it in the cache and tiktoken loads it from there."""
    url = f"https://127.0.0.1:{silent_proxy.port}/encodings/stm_tiny.tiktoken"
    plugins = tmp_path / "plugins"
    (plugins / "tiktoken_ext").mkdir(parents=True)
    (plugins / "tiktoken_ext" / "stm_tiny_encoding.py").write_text(
        PLUGIN.format(url=url, sha256=TINY.sha256), encoding="utf-8")
    put_in_cache(Path(behind_the_proxy["TIKTOKEN_CACHE_DIR"]), attrs.evolve(TINY, url=url),
                 tiny_file_bytes())
    script = tmp_path / "load.py"
    script.write_text(LOAD, encoding="utf-8")
    env = {**behind_the_proxy, "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugins)])}
    done, _ = run([sys.executable, str(script), url], env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["stm_tiny", "2", str(len("héllo".encode()))]
    assert silent_proxy.accepted == []
