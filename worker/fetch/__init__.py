"""Fetching documents given by URI: objects of an object store (S3, GCS, Azure: one library, obstore),
web URLs (httpx), with retries, backoff and jitter, size limits and the clouds' own credentials."""
