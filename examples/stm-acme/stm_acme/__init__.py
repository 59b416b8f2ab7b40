"""stm plugins for the fictional Acme LLM provider.

Each module is one plugin, published as its own entry point in the ``stm``
group (see ``pyproject.toml``), so the bundle can be enabled or disabled piece
by piece.
"""

#: Provider keys hosts put in ``Turn.provider`` for Acme models.
ACME = "acme"
ACME_LITE = "acme-lite"
PROVIDERS = frozenset({ACME, ACME_LITE})
