"""Alembic migrations of the index, shipped inside the package (script_location
``expdna:migrations``). Generate new revisions with alembic; never hand-type their ids."""
