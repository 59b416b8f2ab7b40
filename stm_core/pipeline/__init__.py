"""``build_context`` as a pipeline of small stages, one module each."""
