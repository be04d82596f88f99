"""Documents as chunks, and chunks with their vectors as points (the worker side of a job)."""
