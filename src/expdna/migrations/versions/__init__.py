"""Alembic revisions of the index schema (alembic skips this file)."""
