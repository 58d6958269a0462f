"""The shared store (issue 24): copies of chosen turns in a PostgreSQL database that a person's
machines or a team share. The local SQLite store stays each machine's source of truth; this package
pushes redacted copies (``push.py``, through the fail-closed gate of ``gate.py``) and owns the shared
schema, its roles and row-level security (``schema.py``). psycopg is imported only here (docs/share.md).
"""
