# The stm test kit: stm_plugin_manager, register_plugin, stm_memory_store,
# make_turn and stm_clock.
pytest_plugins = ["stm_core.testing"]
