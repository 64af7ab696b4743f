"""The SQL index: engines and transactions (``engine``), tables (``models``), alembic
(``migrate``), bulk statements (``bulk``) and interned path and value ids (``intern``).
"""
