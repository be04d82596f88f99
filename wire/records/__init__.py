"""Typed records for every value that crosses Redis, one definition for the worker and the
client (see ``record.py``): job arguments, results, progress, heartbeats, search calls and
replies, dead letters, job outcomes, and the errors inside them."""
