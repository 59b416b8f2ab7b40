"""Database URLs for stm and DSNs for the raw drivers."""

from __future__ import annotations

from pathlib import Path


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def asyncpg_dsn(url: str) -> str:
    """``postgresql[+asyncpg]://...`` -> ``postgresql://...`` for asyncpg itself."""
    _scheme, rest = url.split("://", 1)
    return "postgresql://" + rest


def stm_postgres_url(url: str, schema: str) -> str:
    """stm's URL for PostgreSQL, in a schema of its own."""
    _scheme, rest = url.split("://", 1)
    sep = "&" if "?" in rest else "?"
    return f"postgresql+asyncpg://{rest}{sep}schema={schema}"
