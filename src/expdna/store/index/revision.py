"""The index schema revision this expdna writes and reads, without importing alembic or
SQLAlchemy (a test holds it equal to the newest revision in ``expdna/migrations``)."""

HEAD = "7c3e51b0a9d2"
