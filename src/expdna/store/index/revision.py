"""The index schema revision this expdna writes and reads, without importing alembic or
SQLAlchemy (a test holds it equal to the newest revision in ``expdna/migrations``)."""

HEAD = "392ae1483611"
