"""The dashboard in a real browser (Debian's Chromium through Playwright) while a real worker
ingests: the overview's depth falls, a job's progress bar reaches 100%, a refused document's
error code shows, a dead letter's retry works with the token and is refused without it, a
search returns cited hits in every mode, and markup in a document id or an error shows as
text. The same tests take the screenshots of the docs (`make screenshots` saves them in
docs/images/dashboard-*.png)."""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request

import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire import constants
from poolq.wire.job_plan import Limits
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.dashboard import seed
from tests.dashboard.browser import IMAGES, LAUNCH_ARGS, DashboardProcess, chromium

pytestmark = pytest.mark.slow
TOKEN = "browser-test-token"
EVIL_ID = "<script>window.pwned=1</script>"
COLLECTION = "kb"
JOBS = 24


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dashboard")
    redis = LocalRedis(tmp / "redis").start()
    dash = DashboardProcess(redis.url, token=TOKEN, log=tmp / "dashboard.log")

    async def enqueue():
        async with PoolqClient(redis.url) as c:
            docs = [
                {"id": f"p-{i:03d}", "text": t} for i, t in enumerate(passages(JOBS * 4, 20, 60))
            ]
            docs.append(
                {"id": "whale", "text": "Humpback whales sing long songs in tropical waters."}
            )
            ids = await c.enqueue(COLLECTION, docs, job_size=4, limits=Limits())
            bad = await c.enqueue(
                COLLECTION,
                [{"id": EVIL_ID, "text": ""}, {"id": "fine", "text": "A fine short text."}],
                limits=Limits(),
            )
            # a job that fails for good at once (its collection is no string): a dead letter
            await c.redis.enqueue_job(constants.INGEST_JOB, 123, [], _job_id="dead-on-arrival")
            # a file: a parse job, then the ingest job it hands on
            (parse,) = await c.enqueue(
                COLLECTION,
                [{"id": "notes.md", "bytes": b"# Notes\n\nWhales sing in warm seas.\n"}],
                limits=Limits(),
            )
            # and a dead letter whose error holds markup (the worker's own writer)
            await seed.dead(c.redis, "markup-error", ValueError(f"bad input {EVIL_ID}"))
            return ids, bad[0], parse

    ids, bad, parse = run(enqueue())
    state = {"redis": redis, "dash": dash, "ids": ids, "bad": bad, "tmp": tmp, "worker": None}
    state["parse"] = parse
    yield state
    if state["worker"] is not None:
        state["worker"].stop()
    dash.stop()
    redis.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=LAUNCH_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 760})
    pg = context.new_page()
    pg.on("dialog", lambda d: d.accept())
    errors: list[str] = []
    pg.on(
        "console",
        lambda m: (
            errors.append(f"{m.text} ({m.location.get('url')})") if m.type == "error" else None
        ),
    )
    failed: list[str] = []
    pg.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    yield pg
    context.close()
    # a clean console on every page: no CSP refusal, no missing resource (the icon included);
    # only the actions refused on purpose (a DLQ retry without the token: 401/403) may log
    refused = [f for f in failed if not f.startswith(("401 ", "403 ")) or "/api/" not in f]
    assert refused == [], failed
    assert [e for e in errors if "/api/" not in e] == [], errors


def shot(pg, name: str) -> None:
    """The page as the docs show it: 64 colours, so the committed images stay small."""
    from PIL import Image

    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / f"dashboard-{name}.png"
    pg.screenshot(path=str(path))
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=64)
    small.save(path, optimize=True)


def number(pg, selector: str) -> int:
    return int(pg.inner_text(selector).strip())


def until(check, timeout_s: float, what: str) -> None:
    """Poll ``check()`` from here (the page's CSP allows no evaluated strings, so Playwright's
    wait_for_function cannot run in it)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g}s: {what}")
        time.sleep(0.25)


def test_1_overview_depth_falls_while_a_worker_ingests(env, page):
    page.goto(env["dash"].url + "/")
    # the page refreshes itself; its first render may be the shared tick of the dashboard's
    # start-up probe (read before the jobs were enqueued, kept for a tick)
    until(lambda: number(page, "#depth") >= JOBS, 10, "the page shows the backlog")
    start = number(page, "#depth")
    env["worker"] = WorkerProcess(env["redis"].url, env["tmp"] / "qdrant").start()
    until(lambda: number(page, "#depth") < start, 120, "the depth falls")
    until(lambda: number(page, "#depth") == 0, 300, "the queue drains")
    until(lambda: number(page, "#running") == 0, 120, "every job ends")
    assert number(page, "#alive") >= 1  # (the worker and its parse process)
    until(lambda: number(page, "#done") >= JOBS, 30, "the done count catches up")
    shot(page, "overview")


def test_2_a_jobs_progress_bar_reaches_100_percent(env, page):
    job_id = env["ids"][-1]
    page.goto(f"{env['dash'].url}/jobs/{job_id}")
    page.wait_for_selector(".status.done", timeout=120_000)
    assert page.get_attribute("progress", "data-percent") == "100"
    assert page.inner_text(".pct") == "100%"
    page.goto(env["dash"].url + "/jobs?status=done")
    assert page.locator("tr.job").count() >= JOBS
    shot(page, "jobs")


def test_3_a_refused_documents_code_shows_and_markup_stays_text(env, page):
    page.goto(f"{env['dash'].url}/jobs/{env['bad']}")
    row = page.locator("tr.doc", has_text="script")
    assert row.locator(".doc-id").inner_text() == EVIL_ID  # shown as text
    assert row.locator("code.code").inner_text() == "bad_request"
    assert page.evaluate("window.pwned") is None
    shot(page, "job")


def test_4_dead_letter_retry_needs_the_token(env, page):
    page.goto(env["dash"].url + "/dlq")
    page.wait_for_selector("tr.dead[data-job='dead-on-arrival']", timeout=60_000)
    assert "bad_request" in page.inner_text("tr.dead[data-job='dead-on-arrival']")
    error = page.locator("tr.dead[data-job='markup-error'] td.error").inner_text()
    assert error == f"ValueError: bad input {EVIL_ID}"  # shown as text
    assert page.evaluate("window.pwned") is None
    shot(page, "dlq")
    button = "tr.dead[data-job='dead-on-arrival'] button:has-text('retry')"
    page.fill("#token", "")
    page.click(button)
    until(lambda: page.inner_text("#notice").startswith("401"), 10, "the retry is refused")
    assert page.locator("tr.dead[data-job='dead-on-arrival']").count() == 1
    page.fill("#token", TOKEN)
    page.dispatch_event("#token", "change")
    page.click(button)
    until(lambda: page.inner_text("#notice").startswith("done"), 10, page.inner_text("#notice"))
    assert "dead-on-arrival~retry-" in page.inner_text("#notice")
    # the retried job fails again for good, under its new id
    page.wait_for_selector("tr.dead[data-job^='dead-on-arrival~retry-']", timeout=60_000)
    assert page.locator("tr.dead[data-job='dead-on-arrival']").count() == 0


def test_5_search_returns_cited_hits_in_every_mode(env, page):
    page.goto(f"{env['dash'].url}/search?q=songs+of+humpback+whales&collection={COLLECTION}")
    modes = page.locator(".mode")
    assert modes.count() == 4
    for i in range(4):
        mode = modes.nth(i)
        assert mode.locator(".error").count() == 0, mode.inner_text()
        assert mode.locator("li.hit").count() >= 1
        assert mode.locator("li.hit cite").first.inner_text().startswith("whale")
        assert re.search(r"\d+(\.\d+)? ms", mode.locator(".latency").inner_text())
    shot(page, "search")


def test_6_workers_and_reindex_pages(env, page):
    page.goto(env["dash"].url + "/workers")
    row = page.locator("tr.worker").first
    assert "alive" in row.inner_text() and "cpu" in row.inner_text()
    shot(page, "workers")
    page.goto(env["dash"].url + "/reindex")
    assert page.locator("h1").inner_text() == "Reindex"
    shot(page, "reindex")


def test_7_a_parsed_files_job_shows_its_parse_encode_and_write_times(env, page):
    url = env["dash"].url

    def job(job_id):
        with urllib.request.urlopen(f"{url}/api/jobs/{job_id}", timeout=10) as r:
            return json.load(r)

    until(lambda: job(env["parse"])["status"] == "done", 120, "the parse job ends")
    (child,) = job(env["parse"])["outcome"]["result"]["next_jobs"]
    until(lambda: job(child)["status"] == "done", 120, "its ingest job ends")
    timings = job(child)["timings"]
    assert timings["parse_ms"] > 0 and timings["encode_ms"] > 0 and timings["write_ms"] >= 0
    page.goto(f"{url}/jobs/{child}")
    assert "parse" in page.inner_text("table.timings")
