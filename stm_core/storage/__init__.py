"""The storage contract: records, the adapter protocol, argument validation.

What an adapter implements (:mod:`~stm_core.storage.protocol`) and the plain
records it trades in (:mod:`~stm_core.storage.records`). This layer imports
only values (:mod:`stm_core.models`, :mod:`stm_core.settings`,
:mod:`stm_core.errors`, text helpers); the adapters themselves are plugins
(``stm_plugins``), found by :mod:`stm_core.plugins.storage`.
"""
