"""The engine: every read and write of stored memory, through one cache.

* :mod:`~stm_core.engine.core`: :class:`~stm_core.engine.core.Engine`, the
  one place that reads through the cache and writes through to storage;
* :mod:`~stm_core.engine.cache`: the cache it owns, versioned per change;
* :mod:`~stm_core.engine.invalidation`: what other processes changed, heard
  and applied;
* :mod:`~stm_core.engine.janitor`: deleting rows nobody touched for a while;
* :mod:`~stm_core.engine.profile`: a server's effective configuration,
  composed once per settings change.

This layer sits below admin, the tool and the pipeline, and above the plugin
wing (:mod:`stm_core.plugins`) and the storage contract
(:mod:`stm_core.storage`).
"""
