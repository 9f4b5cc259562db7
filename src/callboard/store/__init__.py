"""Stores: the Store interface (base) and its implementations (sqlite/, postgres/)."""
