"""A real PgBouncer in transaction pooling mode, in front of the test PostgreSQL.

Started per test on a free loopback port with its own ini and user list in a
temporary directory (trust auth, like the test server), so the multi-process
tests can run their statements through it. PgBouncer refuses to run as root;
under root it is told to switch to ``nobody``.

PgBouncer before 1.20 cannot pass a ``search_path`` to the server, so the
pooled database sets the test's schema with ``connect_query`` on every server
connection: what an operator does with ``?schema=`` behind such a pooler
(docs/deployment.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

#: Where Debian's package puts it (not on a normal user's PATH).
CANDIDATES = ("pgbouncer", "/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer")


def find_pgbouncer() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgBouncer:
    """One PgBouncer process; :meth:`url` gives the pooled URL of a schema."""

    def __init__(self, executable: str, workdir: Path, upstream_url: str, schema: str,
                 pool_size: int = 20) -> None:
        self.executable = executable
        self.workdir = workdir
        self.schema = schema
        parts = urlsplit(upstream_url)
        self.user = parts.username or "postgres"
        self.dbname = parts.path.lstrip("/") or "postgres"
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.pool_size = pool_size
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def _write_config(self) -> Path:
        host, port = self.upstream
        set_path = f"connect_query='SET search_path TO \"{self.schema}\"'"
        ini = self.workdir / "pgbouncer.ini"
        users = self.workdir / "userlist.txt"
        users.write_text(f'"{self.user}" ""\n')
        ini.write_text(f"""\
[databases]
{self.dbname} = host={host} port={port} dbname={self.dbname} {set_path}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {users}
pool_mode = transaction
default_pool_size = {self.pool_size}
max_client_conn = 500
ignore_startup_parameters = search_path, extra_float_digits
server_check_delay = 0
""")
        for path in (self.workdir, ini, users):
            path.chmod(0o755 if path.is_dir() else 0o644)
        return ini

    def start(self, timeout_s: float = 10) -> None:
        self.port = free_port()
        ini = self._write_config()
        command = [self.executable]
        if os.geteuid() == 0:  # PgBouncer will not run as root
            command += ["-u", "nobody"]
        with (self.workdir / "pgbouncer.log").open("wb") as log:  # its stderr
            self.proc = subprocess.Popen([*command, str(ini)], stdout=log, stderr=log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited ({self.proc.returncode}): "
                                   f"{self.log_tail()}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.2):
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"pgbouncer did not listen on port {self.port} within "
                           f"{timeout_s} s: {self.log_tail()}")

    def log_tail(self) -> str:
        text = ""
        log = self.workdir / "pgbouncer.log"
        if log.exists():
            text += log.read_text(errors="replace")
        return text[-3000:]

    def url(self, *, statement_cache_size: int | None = 0) -> str:
        """The pooled URL of the schema, asyncpg's statement cache off by default."""
        query = f"schema={self.schema}"
        if statement_cache_size is not None:
            query += f"&statement_cache_size={statement_cache_size}"
        return (f"postgresql+asyncpg://{self.user}@127.0.0.1:{self.port}/{self.dbname}"
                f"?{query}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
