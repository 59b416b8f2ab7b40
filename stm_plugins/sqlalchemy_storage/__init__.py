"""SQLAlchemy-defined storage for SQLite and PostgreSQL (placeholder; being built)."""
