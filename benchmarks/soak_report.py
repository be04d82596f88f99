"""The printed report of one ``soak.py`` run: chunks and rate, its events, the jobs' outcomes and
arq tries, each worker's counters, and the exactness check with what was missing or extra."""

from __future__ import annotations

from benchmarks.soak_run import RunReport


def print_report(r: RunReport) -> None:
    ex = r.exactness
    assert ex is not None
    rate = ex.points / r.wall_s if r.wall_s else 0.0
    retried = {j: t for j, t in r.job_tries.items() if t > 1}
    print(f"[{r.label}]")
    print(
        f"  {ex.points} chunks in the collection ({r.expected_chunks} enqueued), "
        f"{r.documents} documents, {r.jobs} jobs"
    )
    print(f"  wall {r.wall_s:.1f}s (enqueue -> last job done): {rate:.1f} chunks/s")
    for e in r.events:
        print(f"    {e}")
    done = sum(o.status == "done" for o in r.outcomes.values())
    print(
        f"  jobs: {done} done, {len(r.failed)} failed, {r.jobs - len(r.outcomes)} unfinished; "
        f"{r.job_errors} document errors; sum of job points {r.job_points}"
    )
    print(
        f"  arq tries: {len(retried)} jobs ran more than once "
        f"(max try {max(r.job_tries.values(), default=0)}); dead-letter list: {r.dlq}"
    )
    for hb in r.heartbeats:
        print(
            f"  worker pid {hb.get('pid')}{' (SIGKILLed; last heartbeat)' if hb.get('killed') else ''}:"
            f" jobs_done {hb.get('jobs_done')}, jobs_retried {hb.get('jobs_retried')},"
            f" jobs_failed {hb.get('jobs_failed')}, sink_retries {hb.get('sink_retries')}"
        )
    lost = len(ex.missing_docs) + max(0, r.expected_chunks - ex.points)
    print(
        f"  exact: {'yes' if r.ok else 'NO'} | docs missing {len(ex.missing_docs)}, extra "
        f"{len(ex.extra_docs)}, bad chunk indices {len(ex.bad_indices)}, chunk_count differs "
        f"{len(ex.wrong_count)} | points {ex.points} vs sum of chunk_count "
        f"{ex.chunk_count_sum} vs sum of job points {r.job_points} vs expected "
        f"{r.expected_chunks} (lost >= {lost})"
    )
    for name, items in (
        ("missing", ex.missing_docs),
        ("extra", ex.extra_docs),
        ("bad indices", ex.bad_indices),
        ("chunk_count differs", ex.wrong_count),
    ):
        if items:
            print(f"    {name}: {items[:10]}{' ...' if len(items) > 10 else ''}")
    for o in r.failed[:5]:
        print(f"    job {o.job_id} {o.status}: {o.error}")
