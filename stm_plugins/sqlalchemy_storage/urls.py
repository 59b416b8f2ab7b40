"""Database URLs the adapter accepts, parsed into what the drivers need.

SQLite::

    sqlite+aiosqlite:///relative/path.db     (relative to the working directory)
    sqlite+aiosqlite:////absolute/path.db
    sqlite+aiosqlite:///:memory:             (one process-private database)
    sqlite:///...                            (same)

PostgreSQL::

    postgresql+asyncpg://user:password@host:5432/dbname?schema=stm
    postgresql://...   postgres://...        (same)

``schema`` selects (and creates) a schema; ``statement_cache_size=0`` is for
PgBouncer in transaction mode; the libpq-style TLS/session options below are
passed to asyncpg.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import attrs

from stm_core.errors import ConfigurationError

SQLITE_SCHEMES = ("sqlite+aiosqlite", "sqlite")
POSTGRES_SCHEMES = ("postgresql+asyncpg", "postgresql", "postgres")

#: Query options passed through to asyncpg's DSN parser.
_ASYNCPG_OPTIONS = frozenset({
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslcrl",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "target_session_attrs",
    "krbsrvname", "gsslib", "passfile", "application_name",
})
_OWN_OPTIONS = frozenset({"schema", "statement_cache_size"})
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@attrs.frozen(kw_only=True)
class SqliteTarget:
    #: Filesystem path, or ``None`` for a private in-memory database.
    path: str | None

    @property
    def label(self) -> str:
        return self.path or ":memory:"


@attrs.frozen(kw_only=True)
class PostgresTarget:
    #: DSN for asyncpg (scheme ``postgresql``, our own options removed).
    dsn: str
    schema: str | None = None
    statement_cache_size: int = 100

    @property
    def label(self) -> str:
        parts = urlsplit(self.dsn)
        host = parts.hostname or "localhost"
        where = f"{host}{parts.path}"
        return f"{where} (schema {self.schema})" if self.schema else where


def _scheme_and_rest(url: str) -> tuple[str, str]:
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigurationError(f"{url!r} is not a database URL (expected scheme://...)")
    return scheme.lower(), rest


def parse_sqlite_url(url: str) -> SqliteTarget:
    scheme, _rest = _scheme_and_rest(url)
    if scheme not in SQLITE_SCHEMES:
        raise ConfigurationError(f"{url!r} is not a SQLite URL ({', '.join(SQLITE_SCHEMES)})")
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"SQLite URL {url!r} takes no query options; use "
            f"{scheme}:///relative.db or {scheme}:////absolute/path.db")
    if parts.netloc:
        raise ConfigurationError(
            f"SQLite URL {url!r} has a host part ({parts.netloc!r}); a file URL has three "
            f"slashes: {scheme}:///relative.db or {scheme}:////absolute/path.db")
    path = unquote(parts.path)[1:]  # drop the separator after the empty host
    if not path:
        raise ConfigurationError(
            f"SQLite URL {url!r} names no file; use {scheme}:///relative.db, "
            f"{scheme}:////absolute/path.db or {scheme}:///:memory:")
    return SqliteTarget(path=None if path == ":memory:" else path)


def parse_postgres_url(url: str) -> PostgresTarget:
    scheme, rest = _scheme_and_rest(url)
    if scheme not in POSTGRES_SCHEMES:
        raise ConfigurationError(
            f"{url!r} is not a PostgreSQL URL ({', '.join(POSTGRES_SCHEMES)})")
    parts = urlsplit("postgresql://" + rest)
    if parts.fragment:
        raise ConfigurationError(f"PostgreSQL URL {url!r} must not have a #fragment")
    options = parse_qsl(parts.query, keep_blank_values=True)
    names = [name for name, _ in options]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ConfigurationError(f"PostgreSQL URL option(s) given twice: {', '.join(duplicated)}")
    unknown = sorted(set(names) - _ASYNCPG_OPTIONS - _OWN_OPTIONS)
    if unknown:
        raise ConfigurationError(
            f"unknown PostgreSQL URL option(s) {', '.join(unknown)}; allowed: "
            + ", ".join(sorted(_ASYNCPG_OPTIONS | _OWN_OPTIONS)))
    values = dict(options)
    schema = values.pop("schema", None)
    if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigurationError(
            f"schema={schema!r} is not a plain identifier (letters, digits, underscore; "
            f"not starting with a digit; at most 63 characters)")
    cache_size = 100
    raw_cache = values.pop("statement_cache_size", None)
    if raw_cache is not None:
        if not raw_cache.isdigit():
            raise ConfigurationError(
                f"statement_cache_size={raw_cache!r} must be a whole number (0 disables "
                f"prepared statements, for PgBouncer in transaction mode)")
        cache_size = int(raw_cache)
    dsn = parts._replace(query=urlencode(values)).geturl()
    return PostgresTarget(dsn=dsn, schema=schema, statement_cache_size=cache_size)
