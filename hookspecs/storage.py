"""Storage adapters, claimed by URL scheme."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import StorageAdapterSpec


class StorageSpecs:
    @hookspec
    def stm_register_storage_adapters(self) -> Iterable[StorageAdapterSpec]:
        """Offer storage adapters, each claiming one or more URL schemes.

        When: once, when a store is opened; the adapter whose ``schemes``
        contains the URL's scheme (the part before ``://``) is built with
        ``factory(url, settings)`` and set up.

        :return: an iterable of :class:`~hookspecs.types.StorageAdapterSpec`;
            results of all plugins are combined. Two plugins claiming the same
            scheme is a :class:`~stm_core.errors.PluginError` naming both.

        Example::

            @hookimpl
            def stm_register_storage_adapters():
                return [StorageAdapterSpec(name="redis", schemes=("redis",),
                                           factory=lambda url, settings: RedisAdapter(url))]
        """
        raise NotImplementedError
