"""The embedded default MemoryStore: one SQLite file (WAL), FTS5, in-memory BM25 and vectors."""

from powercontext.storage.sqlite.ann import IndexOptions
from powercontext.storage.sqlite.connections import ConnectionOptions
from powercontext.storage.sqlite.schema import SCHEMA_VERSION
from powercontext.storage.sqlite.store import SqliteMemoryStore

__all__ = ["SCHEMA_VERSION", "ConnectionOptions", "IndexOptions", "SqliteMemoryStore"]
