"""Building the storage adapter that claims a URL, as ``open_store`` does, and
what a database URL is as typed (:func:`database_url`).

For adapter authors who wrap a built-in adapter (or any registered one):
``adapter_for_url("sqlite:///bot.db", settings)`` returns the adapter the
SQLite plugin would build, not yet set up, without knowing its class.
"""

from __future__ import annotations

from stm_core.errors import ValidationError
from stm_core.plugins import StmPluginManager, create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.storage.protocol import StorageAdapter

#: What a bare path (no ``scheme://``) stands for.
BARE_PATH_SCHEME = "sqlite+aiosqlite"


def database_url(target: str) -> str:
    """A database URL as a host or an operator types it: a URL
    (``scheme://...``) as it is, or a bare path (``bot.db``,
    ``/var/lib/bot/stm.db``) taken as a SQLite file."""
    return target if "://" in target else f"{BARE_PATH_SCHEME}:///{target}"


def adapter_for_url(url: str, settings: Settings | None = None, *,
                    plugin_manager: StmPluginManager | None = None) -> StorageAdapter:
    """The adapter the registered storage plugins build for ``url``.

    :param url: a database URL; its scheme (before ``://``) picks the adapter.
        A bare path is a SQLite file (:func:`database_url`).
    :param settings: passed to the adapter's factory (default: ``Settings()``).
    :param plugin_manager: whose storage plugins to ask (default: the built-ins
        only, so a wrapper registered for another scheme never finds itself).
    :raises UnknownDatabaseURL: no plugin claims the scheme.

    The caller owns the adapter: ``await adapter.setup()`` before use and
    ``await adapter.aclose()`` after.
    """
    if not isinstance(url, str):
        raise ValidationError(f"a database URL must be a string, not {type(url).__name__}",
                              field="url", allowed="e.g. 'sqlite:///bot.db'")
    if settings is not None and not isinstance(settings, Settings):
        raise ValidationError(f"settings must be a Settings, not {type(settings).__name__}",
                              field="settings", allowed="stm_core.Settings or None")
    pm = plugin_manager or create_plugin_manager(load_entrypoints=False)
    url = database_url(url)
    spec = Hooks(pm).storage_adapter_for(url)
    return spec.factory(url, settings or Settings())
