"""Built-in plugins. Each module is registered by the same path as a
third-party plugin (see ``stm_core.plugins.DEFAULT_PLUGINS``)."""
