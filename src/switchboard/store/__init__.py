"""Stores: the Store interface and its implementations."""

from switchboard.store.base import DuplicateIdempotencyKey, NewDelivery, NewSession, Store
from switchboard.store.sqlite import SQLiteStore

__all__ = ["DuplicateIdempotencyKey", "NewDelivery", "NewSession", "SQLiteStore", "Store"]
