"""Test kit for plugin authors (opt-in pytest plugin: ``pytest_plugins = ["stm_core.testing"]``)."""
