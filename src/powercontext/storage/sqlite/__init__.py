"""The embedded default MemoryStore: one SQLite file (WAL), FTS5 with bm25, numpy vectors."""

from powercontext.storage.sqlite.connections import ConnectionOptions
from powercontext.storage.sqlite.schema import SCHEMA_VERSION
from powercontext.storage.sqlite.store import SqliteMemoryStore

__all__ = ["SCHEMA_VERSION", "ConnectionOptions", "SqliteMemoryStore"]
