"""Reindex planning: reading a source and deciding what changed (the worker side of a reindex job)."""
