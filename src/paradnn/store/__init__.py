"""SQLite result store (standard library only; no torch)."""

from paradnn.store.db import DEFAULT_DB, Store, open_store

__all__ = ["DEFAULT_DB", "Store", "open_store"]
