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

# Files to parse (PDF, HTML, DOCX, ...) have a queue of their own, drained by workers of the
# parse role (``poolq worker --role parse``, or the parse process of ``--role all``): a parse job
# reads its files and hands the documents on as ingest jobs, ids ``{job_id}.encode{n}``.
PARSE_QUEUE: Final = KEY_PREFIX + "queue:parse"

# Job function names (arq looks jobs up by these).
INGEST_JOB: Final = "ingest"
REINDEX_JOB: Final = "reindex"
PARSE_JOB: Final = "parse"
# the queue each job function is drained from (every other function: INGEST_QUEUE)
FUNCTION_QUEUES: Final = {PARSE_JOB: PARSE_QUEUE}

# Reindexing: one at a time per collection (a lock held for the job's lifetime), and its
# progress (msgpack map) for `poolq status`.
REINDEX_LOCK_KEY: Final = KEY_PREFIX + "reindex:lock:{collection}"
REINDEX_PROGRESS_KEY: Final = KEY_PREFIX + "reindex:progress:{collection}"
REINDEX_PROGRESS_TTL_S: Final = 7 * 24 * 3600
# A sync of a collection with a bucket's prefix (`poolq reindex --source s3://...`): where it got
# to, checkpointed after each listing page (msgpack SyncCheckpoint, wire/records/sync.py), so a
# sync that was killed or parked resumes after the last page it finished. Deleted once done.
SOURCE_SYNC_KEY: Final = KEY_PREFIX + "sync:{collection}"
SOURCE_SYNC_TTL_S: Final = 7 * 24 * 3600

# Per-worker heartbeat hash (msgpack-encoded stats), refreshed every HEARTBEAT_INTERVAL_S.
HEARTBEAT_KEY: Final = KEY_PREFIX + "worker:{worker_id}"
HEARTBEAT_PATTERN: Final = KEY_PREFIX + "worker:*"
HEARTBEAT_INTERVAL_S: Final = 2.0
HEARTBEAT_TTL_S: Final = 10  # a worker silent this long is dead: its running jobs are handed back

# Running jobs per worker (a set of job ids), for handing back the jobs of a dead worker.
WORKER_JOBS_KEY: Final = KEY_PREFIX + "worker-jobs:{worker_id}"
WORKER_JOBS_PATTERN: Final = KEY_PREFIX + "worker-jobs:*"
REAP_INTERVAL_S: Final = 2.0
# keys a SCAN step looks at (Redis' default is 10: a pass over 100k job keys would be 10k round
# trips every REAP_INTERVAL_S, per worker)
SCAN_COUNT: Final = 1000

# The ended jobs `poolq status` counts as done/failed, as workers record them (see
# JOB_OUTCOME_KEY below); queued jobs are read from arq's queue, running ones from the workers'
# job lists (ingest/job_index.py).
JOB_INDEX_DONE_KEY: Final = KEY_PREFIX + "jobs:done"
JOB_INDEX_FAILED_KEY: Final = KEY_PREFIX + "jobs:failed"
# arq's result TTL (Settings.keep_result_s, default 24 h): older jobs have no result left.
JOB_INDEX_TTL_S: Final = 24 * 3600
# `poolq status` without job ids lists at most this many jobs (the newest); counts cover all.
STATUS_LIST_LIMIT: Final = 100

# Dead-letter list (jobs that failed for good): a hash job id -> msgpack entry.
DEAD_LETTER_KEY: Final = KEY_PREFIX + "dlq"

# Where an embedded Qdrant lives when neither a URL nor a path is given (Settings.qdrant_path).
DEFAULT_QDRANT_PATH: Final = "./poolq_data/qdrant"

# Worker limits (Settings defaults; every worker's heartbeat reports its own under "limits",
# so clients know them, and a client with no live worker falls back to these).
MAX_DOCUMENTS_PER_JOB: Final = 1000
MAX_DOCUMENT_BYTES: Final = 1 << 20  # UTF-8 text of one document
MAX_JOB_BYTES: Final = 64 << 20  # a whole job payload, refused before it is decoded
MAX_FILE_BYTES: Final = 32 << 20  # one file sent to be parsed (poolq enqueue --max-file-bytes)
# The bounds of one file's parse (the parse stage's settings parse_timeout_s, parse_memory_mb).
PARSE_TIMEOUT_S: Final = 120.0
PARSE_MEMORY_MB: Final = 1024  # address space of one parse child above its start
OCR: Final = "auto"  # which pages OCR reads (worker/parse/ocr_pass.py)

# Progress of a running ingest job: a hash with the fields documents (in the job), done
# (documents finished), chunks, points, errors, skipped; written by the worker while the job
# runs (after chunking, after encoding, after writing, and at least every 0.5 s meanwhile).
JOB_PROGRESS_KEY: Final = KEY_PREFIX + "job-progress:{job_id}"
JOB_PROGRESS_TTL_S: Final = 3600
JOB_PROGRESS_EVERY_S: Final = 0.5

# Every metadata key an ingest job wrote into a collection, with its JSON types: a hash
# metadata key (nested keys dotted) -> comma-separated types among string, integer, float,
# boolean, array, object, null. Searches check their filters against it.
COLLECTION_FIELDS_KEY: Final = KEY_PREFIX + "fields:{collection}"

# Where /metrics listens (with a metrics port): loopback unless told otherwise.
DEFAULT_METRICS_HOST: Final = "127.0.0.1"

# The job index as workers record it (see ingest/job_index.py): JOB_INDEX_DONE_KEY and
# JOB_INDEX_FAILED_KEY are sorted sets job id -> end time (unix seconds), trimmed to the result
# TTL on every write; each ended job's outcome (msgpack {"status", "result" | "error",
# "finished_at"}: never its documents) lives under JOB_OUTCOME_KEY as long. Clients write no index
# at enqueue.
JOB_OUTCOME_KEY: Final = KEY_PREFIX + "job-outcome:{job_id}"
# When each worker was last seen alive: a sorted set worker id -> unix seconds, refreshed with
# the reaper's passes, so clients find heartbeats without a SCAN and know the age of the last
# one after its key expired.
WORKER_LAST_SEEN_KEY: Final = KEY_PREFIX + "worker-last-seen"
WORKER_LAST_SEEN_TTL_S: Final = 7 * 24 * 3600
# Collections whose reindex progress `poolq status` reports (sorted set collection -> when a
# reindex of it was last started or scheduled), trimmed to REINDEX_PROGRESS_TTL_S.
REINDEX_COLLECTIONS_KEY: Final = KEY_PREFIX + "reindex:collections"

# Job priority (``PoolqClient.enqueue(priority=...)``, ``poolq enqueue --priority``): the lane a
# job's chunks take in the engines, and its place in the queue. arq starts jobs in score order,
# so an interactive job is enqueued with a score of its enqueue time minus
# INTERACTIVE_HEAD_START_MS: ahead of every bulk job, first come first served among
# interactive ones. "auto" (the default) is interactive for an enqueue call that makes one job,
# bulk for a larger one. The worker reads the lane from the job's ``priority`` argument.
PRIORITIES: Final = ("interactive", "bulk")
PRIORITY_CHOICES: Final = ("auto", *PRIORITIES)
INTERACTIVE_HEAD_START_MS: Final = 10 * 365 * 24 * 3600 * 1000

# One run at a time per job: a running job holds this key (value: the worker id and a token of
# the run) with an expiry of JOB_RUN_LOCK_TTL_S, refreshed by the worker's heartbeat thread. A
# second run of the same job (handed back while the first was alive) waits for the lock instead
# of running the job again, and returns the first run's outcome when it finished.
JOB_RUN_LOCK_KEY: Final = KEY_PREFIX + "job-run:{job_id}"
JOB_RUN_LOCK_TTL_S: Final = HEARTBEAT_TTL_S
# The reaper hands back a dead worker's jobs only once it has seen the worker's heartbeat missing
# for this long without a break (a Redis restart loses every heartbeat at once: live workers
# beat again within HEARTBEAT_INTERVAL_S) and the job's run lock is gone.
REAP_CONFIRM_S: Final = HEARTBEAT_TTL_S

# Cancelling a job (PoolqClient.cancel, `poolq cancel`, the dashboard): a flag under
# JOB_CANCEL_KEY (kept JOB_INDEX_TTL_S) that the job's worker reads at each batch boundary; a
# queued job is taken out of its queue at once. A cancelled job is recorded with the outcome
# status "cancelled" in JOB_INDEX_CANCELLED_KEY (sorted set job id -> when, trimmed like the
# done and failed sets): never retried, never dead-lettered (wire/cancel.py).
JOB_CANCEL_KEY: Final = KEY_PREFIX + "job-cancel:{job_id}"
JOB_INDEX_CANCELLED_KEY: Final = KEY_PREFIX + "jobs:cancelled"
# What a client enqueued, for the dashboard's filters (collection, lane) without reading a job's
# documents: msgpack JobInfo (wire/records/job_info.py), kept JOB_INDEX_TTL_S.
JOB_INFO_KEY: Final = KEY_PREFIX + "job-info:{job_id}"
# The time series the dashboard's charts draw (wire/series.py): one hash per metric, a ring of
# SERIES_SLOTS slots of SERIES_STEP_S seconds (an hour), written by every worker's heartbeat
# thread every SERIES_STEP_S; counters are added up across workers, gauges overwritten.
SERIES_KEY: Final = KEY_PREFIX + "series:{metric}"
SERIES_STEP_S: Final = 10
SERIES_SLOTS: Final = 360
