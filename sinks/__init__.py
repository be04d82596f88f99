"""Sinks: the Qdrant schema, point records, writer and search. Import the modules you need:
this package itself loads nothing (the client imports its plain search types)."""
