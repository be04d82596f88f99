"""``poolq enqueue --wait``: a progress bar per document (chunks, points, errors, skipped as
they come, from the workers' job progress records), a word when no worker is running or Redis
is not reachable (and how long it has been down, in the progress line), and the summary (one
line of text, or one JSON object with ``--json``)."""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm

from poolq.ingest.job_index import JobOutcome
from poolq.ingest.job_progress import WaitProgress
from poolq.ingest.workers_alive import no_worker_message
from poolq.wire.connection import describe_address
from poolq.wire.records.results import IngestResult


class ProgressBar:
    """Moves with every document a worker finishes; says once when no worker is alive (and
    once when one is back): the jobs wait in the queue meanwhile; likewise when Redis is not
    reachable (waited out for ``outage_limit_s``), the progress line saying how long it has been
    down. On a terminal, a bar; else (a log, a pipe) a line every ``LINE_EVERY_S`` while
    something moves."""

    LINE_EVERY_S = 5.0

    def __init__(
        self, total: int, redis_url: str, *, show: bool = True, outage_limit_s: float = 0.0
    ) -> None:
        self.total = total
        self.redis_url = redis_url
        self.outage_limit_s = outage_limit_s
        self.down_since: float | None = None  # (time.monotonic) when Redis went away
        self.no_worker_said = False
        self.bar = None
        self.show = show
        if show and sys.stderr.isatty():
            self.bar = tqdm(total=total, unit="doc", file=sys.stderr, desc="ingesting")
        zero = WaitProgress(0, 0, 0, total, 0, 0, 0, 0, 0)
        self.last_line: tuple[float, str] = (time.monotonic(), self._line(zero))

    def say(self, text: str) -> None:
        if self.bar is not None:
            tqdm.write(f"poolq enqueue: {text}", file=sys.stderr)
        elif self.show:
            print(f"poolq enqueue: {text}", file=sys.stderr, flush=True)

    def __call__(self, p: WaitProgress) -> None:
        self._outage(p.redis_down_s)
        if p.redis_down_s is not None:
            pass  # (the counts of the last look: no word about workers meanwhile)
        elif p.workers_alive == 0 and not self.no_worker_said:
            self.no_worker_said = True
            self.say(
                f"{no_worker_message(self.redis_url)}; the jobs wait in the queue until one "
                "does (Ctrl-C stops waiting, the jobs stay queued)"
            )
        elif p.workers_alive and self.no_worker_said:
            self.no_worker_said = False
            self.say("a worker is running: the jobs are being ingested")
        if self.bar is not None:
            self.bar.n = min(p.done, self.total)
            self.bar.set_postfix_str(self._counts(p), refresh=False)
            self.bar.refresh()
            return
        line = self._line(p)
        now = time.monotonic()
        if line != self.last_line[1] and now - self.last_line[0] >= self.LINE_EVERY_S:
            self.last_line = (now, line)
            self.say(line)

    def _outage(self, down_s: float | None) -> None:
        where = describe_address(self.redis_url)
        if down_s is not None and self.down_since is None:
            self.down_since = time.monotonic() - down_s
            self.say(
                f"Redis at {where} is not reachable: waiting for it to come back (giving up "
                f"after {self.outage_limit_s:g}s: redis_outage_limit_s; Ctrl-C stops waiting, "
                "the jobs stay queued)"
            )
        elif down_s is None and self.down_since is not None:
            self.say(f"Redis at {where} is back after {time.monotonic() - self.down_since:.1f}s")
            self.down_since = None

    @staticmethod
    def _counts(p: WaitProgress) -> str:
        counts = f"chunks={p.chunks} points={p.points} errors={p.errors} skipped={p.skipped}"
        if p.parsed or p.pages:
            ocr = f" ocr_pages={p.ocr_pages}" if p.ocr_pages else ""
            counts = f"parsed={p.parsed} pages={p.pages}{ocr} {counts}"
        if p.redis_down_s is not None:
            counts += f" redis_down={p.redis_down_s:.0f}s"
        return counts

    def _line(self, p: WaitProgress) -> str:
        counts = self._counts(p).replace("=", " ")
        return f"{min(p.done, self.total)}/{self.total} documents, {counts}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summarize(
    outcomes: list[JobOutcome], seconds: float, problems: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``--json`` summary: ``errors`` holds the documents not sent (``where``: FILE:LINE
    or path) and those the workers reported, ``skipped`` the unchanged documents,
    ``refused_jobs`` the jobs whose every document was refused (status ``refused``)."""
    results = [o.result for o in outcomes if isinstance(o.result, IngestResult)]
    docs = sum(r.documents for r in results)
    points = sum(r.points for r in results)
    skipped = sum(r.skipped for r in results)
    errors = problems + [e.to_wire() for r in results for e in r.errors]
    failed = [o for o in outcomes if o.status == "failed"]
    return {
        "jobs": len(outcomes),
        "job_ids": [o.job_id for o in outcomes],
        "failed_jobs": len(failed),
        "refused_jobs": sum(o.status == "refused" for o in outcomes),
        "documents": docs,
        "points": points,
        "skipped": skipped,
        "parsed": sum(r.parsed for r in results),  # files the parse stage read, their pages
        "pages": sum(r.pages for r in results),
        "ocr_pages": sum(r.ocr_pages for r in results),  # of those pages, read by OCR
        "errors": errors,
        "job_errors": [{"job_id": o.job_id, "error": o.error} for o in failed],
        "seconds": round(seconds, 2),
        "documents_per_s": round(docs / seconds, 1) if seconds > 0 else 0.0,
    }


def summary_line(s: dict[str, Any]) -> str:
    refused = s.get("refused_jobs") or 0
    ocr = f", {s['ocr_pages']} by OCR" if s.get("ocr_pages") else ""
    parsed = f"; {s['parsed']} files parsed ({s['pages']} pages{ocr})" if s.get("parsed") else ""
    refusals = f"; {refused} jobs refused every document" if refused else ""
    return (
        f"{s['documents']} documents, {s['points']} points, {len(s['errors'])} errors, "
        f"{s['failed_jobs']} failed jobs, {s['skipped']} skipped (unchanged) in {s['seconds']}s "
        f"({s['documents_per_s']} documents/s){parsed}{refusals}"
    )
