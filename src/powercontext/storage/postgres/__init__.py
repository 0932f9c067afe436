"""The PostgreSQL MemoryStore: tsvector + GIN full text, pgvector + HNSW vectors, CAS commits.

Selected with `POWERCONTEXT_SERVER_DATABASE_URL=postgresql://...`; see docs/postgres.md.
"""

from powercontext.storage.postgres.connection import PostgresOptions
from powercontext.storage.postgres.schema import SCHEMA_VERSION
from powercontext.storage.postgres.store import PostgresMemoryStore, upgrade

__all__ = ["SCHEMA_VERSION", "PostgresMemoryStore", "PostgresOptions", "upgrade"]
