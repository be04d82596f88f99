"""Every Redis key and queue name poolq uses, in one place."""

from __future__ import annotations

from typing import Final

KEY_PREFIX: Final = "poolq:"

# Where clients and workers look for Redis when no URL is given (flag, POOLQ_REDIS_URL, config).
DEFAULT_REDIS_URL: Final = "redis://localhost:6379/0"

# arq queue (a sorted set of job ids) of ingestion jobs.
INGEST_QUEUE: Final = KEY_PREFIX + "queue:ingest"

# Searches have their own queue, ahead of ingestion: a list of msgpack requests that workers
# BLPOP; each reply is pushed onto a per-request list under SEARCH_REPLY_PREFIX that expires.
SEARCH_QUEUE: Final = KEY_PREFIX + "queue:search"
SEARCH_REPLY_PREFIX: Final = KEY_PREFIX + "search:reply:"
SEARCH_REPLY_TTL_S: Final = 60

# Job function names (arq looks jobs up by these).
INGEST_JOB: Final = "ingest"
REINDEX_JOB: Final = "reindex"

# Reindexing: one at a time per collection (a lock held for the job's lifetime), and its
# progress (msgpack map) for `poolq status`.
REINDEX_LOCK_KEY: Final = KEY_PREFIX + "reindex:lock:{collection}"
REINDEX_PROGRESS_KEY: Final = KEY_PREFIX + "reindex:progress:{collection}"
REINDEX_PROGRESS_PATTERN: Final = KEY_PREFIX + "reindex:progress:*"
REINDEX_PROGRESS_TTL_S: Final = 7 * 24 * 3600

# Per-worker heartbeat hash (msgpack-encoded stats), refreshed every HEARTBEAT_INTERVAL_S.
HEARTBEAT_KEY: Final = KEY_PREFIX + "worker:{worker_id}"
HEARTBEAT_PATTERN: Final = KEY_PREFIX + "worker:*"
HEARTBEAT_INTERVAL_S: Final = 2.0
HEARTBEAT_TTL_S: Final = 10  # a worker silent this long is dead: its running jobs are handed back

# Running jobs per worker (a set of job ids), for handing back the jobs of a dead worker.
WORKER_JOBS_KEY: Final = KEY_PREFIX + "worker-jobs:{worker_id}"
WORKER_JOBS_PATTERN: Final = KEY_PREFIX + "worker-jobs:*"
REAP_INTERVAL_S: Final = 2.0

# Job ids enqueued by clients, so `poolq status` can count queued/running/done/failed.
JOB_INDEX_KEY: Final = KEY_PREFIX + "jobs"

# Dead-letter list (jobs that failed for good): a hash job id -> msgpack entry.
DEAD_LETTER_KEY: Final = KEY_PREFIX + "dlq"
