"""The listener's URL and the short cache age used when notices go unheard:
checked where they enter (settings, environment, ``open_store``)."""

from __future__ import annotations

import pytest

from stm_core.errors import ConfigurationError, ValidationError
from stm_core.settings import UNHEARD_CACHE_MAX_AGE_RANGE, Settings
from stm_core.store import open_store


@pytest.mark.parametrize("value", [0, 0.05, -1, 301, float("nan"), True, "5", None])
def test_the_unheard_cache_age_is_range_checked(value: object) -> None:
    with pytest.raises(ConfigurationError, match="STM_UNHEARD_CACHE_MAX_AGE_SECONDS"):
        Settings(unheard_cache_max_age_seconds=value)  # type: ignore[arg-type]


def test_the_unheard_cache_age_range_ends_are_allowed() -> None:
    low, high = UNHEARD_CACHE_MAX_AGE_RANGE
    assert Settings(unheard_cache_max_age_seconds=low).unheard_cache_max_age_seconds == low
    assert Settings(unheard_cache_max_age_seconds=high).unheard_cache_max_age_seconds == high


def test_both_come_from_the_environment() -> None:
    s = Settings.from_env({"STM_UNHEARD_CACHE_MAX_AGE_SECONDS": "2.5",
                           "STM_LISTEN_URL": "postgresql://stm@db:5432/stm"})
    assert s.unheard_cache_max_age_seconds == 2.5
    assert s.listen_url == "postgresql://stm@db:5432/stm"
    for bad in ("soon", "0", "1e9"):
        with pytest.raises(ConfigurationError):
            Settings.from_env({"STM_UNHEARD_CACHE_MAX_AGE_SECONDS": bad})
    assert Settings.from_env({"STM_LISTEN_URL": " "}).listen_url is None  # blank: unset
    with pytest.raises(ConfigurationError, match="STM_LISTEN_URL"):
        Settings(listen_url="  ")


@pytest.mark.parametrize("value", [5432, b"postgresql://x/y", ["postgresql://x/y"]])
async def test_open_store_refuses_a_listen_url_of_the_wrong_type(value: object) -> None:
    with pytest.raises(ValidationError, match="listen_url"):
        async with open_store("memory://", listen_url=value,  # type: ignore[arg-type]
                              load_entrypoints=False):
            pass


async def test_a_listen_url_of_another_kind_or_schema_is_refused(pg_url: str) -> None:
    for wrong in ("sqlite+aiosqlite:///x.db", "db.example:5432"):
        with pytest.raises(ConfigurationError, match="URL"):
            async with open_store(pg_url, listen_url=wrong, load_entrypoints=False):
                pass
    with pytest.raises(ConfigurationError, match="schema"):
        async with open_store(pg_url, listen_url=pg_url.split("?")[0] + "?schema=other",
                              load_entrypoints=False):
            pass
