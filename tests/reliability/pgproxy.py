"""A TCP proxy between stm and PostgreSQL that a test can cut, stall or reset.

It models the network and the server failing without stopping the shared
PostgreSQL server other tests use:

* ``cut()``: every open connection is reset and new ones are refused (the
  database is unreachable);
* ``stall()``: connections stay open but nothing is forwarded (a hung
  network: only timeouts notice);
* ``reset_after(n)``: the next ``n`` bytes from the client pass, then every
  connection is reset (the database failing mid-transaction);
* ``reset_on_reply()``: the next reply from the server is dropped and every
  connection reset (the work, a COMMIT included, was done; the client never
  hears so);
* ``refuse()``: new connections are refused, open ones keep working (with
  the server ending its sessions, as a restarting PostgreSQL does, see
  :meth:`PgProxy.upstream_ports`);
* ``restore()``: back to forwarding.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from urllib.parse import urlsplit, urlunsplit


class PgProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._accepting = True
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._reset_budget: int | None = None
        self._drop_reply = False
        self.connections = 0

    @classmethod
    async def start_for(cls, url: str) -> tuple[PgProxy, str]:
        """A running proxy to the server of ``url`` and the URL through it."""
        parts = urlsplit(url)
        proxy = cls(parts.hostname or "127.0.0.1", parts.port or 5432)
        await proxy.start()
        netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username \
            else f"127.0.0.1:{proxy.port}"
        return proxy, urlunsplit(parts._replace(netloc=netloc))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self._reset_all()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    # -- faults --------------------------------------------------------------
    def cut(self) -> None:
        self._accepting = False
        self._reset_all()

    def refuse(self) -> None:
        self._accepting = False

    def upstream_ports(self) -> set[int]:
        """The local ports of the open connections to the server: its
        ``pg_stat_activity.client_port`` of the sessions that came through."""
        ports = set()
        for _client, server in self._links:
            sock = server.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    ports.add(sock.getsockname()[1])
        return ports

    def stall(self) -> None:
        self._flowing.clear()

    def reset_after(self, client_bytes: int) -> None:
        self._reset_budget = client_bytes

    def reset_on_reply(self) -> None:
        self._drop_reply = True

    def restore(self) -> None:
        self._accepting = True
        self._reset_budget = None
        self._drop_reply = False
        self._flowing.set()

    # -- plumbing --------------------------------------------------------------
    def _reset_all(self) -> None:
        for client, server in list(self._links):
            for writer in (client, server):
                _abort(writer)
        self._links.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._accepting:
            _abort(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _abort(writer)
            return
        self.connections += 1
        link = (writer, up_writer)
        self._links.add(link)
        await asyncio.gather(self._pump(reader, up_writer, from_client=True),
                             self._pump(up_reader, writer, from_client=False),
                             return_exceptions=True)
        self._links.discard(link)
        for w in link:
            _abort(w)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                    from_client: bool) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await self._flowing.wait()
            if not from_client and self._drop_reply:
                self._drop_reply = False
                self._reset_all()
                return
            if from_client and self._reset_budget is not None:
                if len(data) > self._reset_budget:
                    writer.write(data[:self._reset_budget])
                    self._reset_budget = None
                    self._reset_all()
                    return
                self._reset_budget -= len(data)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset, as a dead server or network would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00"
                            b"\x00\x00\x00\x00")
    transport = writer.transport
    with contextlib.suppress(Exception):
        transport.abort()
