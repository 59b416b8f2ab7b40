"""One plugin per mistake; each module is its own entry point."""
