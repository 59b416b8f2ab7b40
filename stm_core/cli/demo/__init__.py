"""``stm demo``: a bundled transcript replayed through the whole cycle."""
