"""The dashboard's JSON API and pages on a real Redis (no worker): the records it returns, the
token on every action (401 and nothing changes without it), read-only without a token,
escaping, the CSP header and the Host check, and cancel of a queued job."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from poolq.ingest.client import PoolqClient
from poolq.ingest.dashboard.app import create_app
from poolq.wire import constants
from tests.dashboard import seed

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EVIL = "<script>alert('x')</script>"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def seeded(redis_server) -> dict[str, list[str]]:
    async def go():
        async with PoolqClient(redis_server.url) as c:
            queued = await seed.enqueue(
                c, "docs", [{"id": f"d{i}", "text": "t"} for i in range(6)], job_size=2
            )
            other = await seed.enqueue(
                c, "notes", [{"id": EVIL, "text": "t"}], priority="interactive"
            )
            await seed.dead(c.redis, "dead-1", ValueError(f"bad input {EVIL}"))
            await seed.dead(c.redis, "dead-2", RuntimeError("boom"))
            await seed.done(c.redis, "old-1")
            await seed.worker(c.redis, "w-1", running=[queued[0]])
            return {"queued": queued, "other": other}

    return run(go())


@pytest.fixture
def api(redis_server) -> Iterator[TestClient]:
    with TestClient(create_app(redis_server.url, token=TOKEN), base_url="http://127.0.0.1") as tc:
        yield tc


def test_overview_counts_lanes_statuses_and_workers(api, seeded):
    o = api.get("/api/overview").json()
    assert o["lanes"] == {"interactive": 1, "bulk": 2, "parse": 0, "deferred": 0}
    c = o["counts"]
    assert (c["queued"], c["running"], c["done"], c["failed"], c["dead_letters"]) == (3, 1, 1, 2, 2)
    assert o["workers_alive"] == 1
    assert set(o["series"]) == {"depth", "documents", "chunks", "done", "failed"}


def test_jobs_filter_by_status_collection_and_lane(api, seeded):
    rows = api.get("/api/jobs").json()["jobs"]
    assert {r["job_id"] for r in rows} >= {*seeded["queued"], *seeded["other"], "old-1"}
    running = api.get("/api/jobs?status=running").json()["jobs"]
    assert [r["job_id"] for r in running] == [seeded["queued"][0]]
    notes = api.get("/api/jobs?collection=notes").json()["jobs"]
    assert [r["job_id"] for r in notes] == seeded["other"]
    assert notes[0]["info"] == {
        **notes[0]["info"],
        "collection": "notes",
        "priority": "interactive",
    }
    bulk = api.get("/api/jobs?lane=bulk&status=queued").json()["jobs"]
    assert {r["job_id"] for r in bulk} == set(seeded["queued"][1:])
    failed = api.get("/api/jobs?status=failed&limit=1").json()["jobs"]
    assert len(failed) == 1 and failed[0]["outcome"]["code"] in ("bad_request", "internal")
    assert api.get("/api/jobs?status=nope").status_code == 400


def test_a_job_lists_its_documents(api, seeded):
    job = api.get(f"/api/jobs/{seeded['other'][0]}").json()
    assert job["status"] == "queued" and [d["id"] for d in job["documents"]] == [EVIL]
    assert api.get("/api/jobs/no-such-job").status_code == 404


def test_workers_and_dead_letters_are_the_clients_records(api, seeded):
    w = api.get("/api/workers").json()
    assert [h["worker_id"] for h in w["workers"]] == ["w-1"]
    assert w["derived"]["w-1"]["engines"]["dense"]["fill"] == pytest.approx(900 / 2048, abs=1e-3)
    d = api.get("/api/dlq").json()
    assert [e["job_id"] for e in d["entries"]] == ["dead-1", "dead-2"]
    assert d["progress"]["dead-1"]["documents"] == 2


def test_actions_need_the_token_and_change_nothing_without_it(api, seeded, redis_server):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        for url, body in (
            ("/api/dlq/retry", {"all": True}),
            ("/api/dlq/drop", {"job_ids": ["dead-1"]}),
            (f"/api/jobs/{seeded['queued'][1]}/cancel", None),
        ):
            r = api.post(url, json=body, headers=headers)
            assert r.status_code == 401, (url, headers, r.text)
    assert len(api.get("/api/dlq").json()["entries"]) == 2
    assert api.get(f"/api/jobs/{seeded['queued'][1]}").json()["status"] == "queued"
    r = api.post("/api/dlq/retry", json={"job_ids": ["dead-1"]}, headers=AUTH)
    assert r.status_code == 200 and r.json()["retried"][0]["job_id"] == "dead-1"
    r = api.post("/api/dlq/drop", json={"all": True}, headers=AUTH)
    assert r.json() == {"dropped": ["dead-2"]}
    assert api.get("/api/dlq").json()["entries"] == []
    assert api.post("/api/dlq/drop", json={"job_ids": ["gone"]}, headers=AUTH).status_code == 404
    assert api.post("/api/dlq/drop", json={"job_ids": []}, headers=AUTH).status_code == 400


def test_cancel_takes_a_queued_job_out_of_the_queue(api, seeded, redis_server):
    job_id = seeded["queued"][2]
    r = api.post(f"/api/jobs/{job_id}/cancel", headers=AUTH)
    assert r.json() == {"job_id": job_id, "state": "cancelled"}
    job = api.get(f"/api/jobs/{job_id}").json()
    assert job["status"] == "cancelled" and job["outcome"]["error"] == "cancelled while queued"
    assert api.get("/api/overview").json()["counts"]["cancelled"] == 1
    again = api.post(f"/api/jobs/{job_id}/cancel", headers=AUTH).json()
    assert again["state"] == "cancelled"
    assert api.post("/api/jobs/nope/cancel", headers=AUTH).status_code == 404

    async def in_queue():
        async with PoolqClient(redis_server.url) as c:
            return await c.redis.zscore(constants.INGEST_QUEUE, job_id)

    assert run(in_queue()) is None


def test_without_a_token_the_dashboard_is_read_only_and_says_so(redis_server, seeded):
    with TestClient(create_app(redis_server.url), base_url="http://127.0.0.1") as tc:
        page = tc.get("/dlq").text
        assert "read-only" in page and 'class="act' not in page
        r = tc.post("/api/dlq/drop", json={"all": True}, headers=AUTH)
        assert r.status_code == 403
        assert len(tc.get("/api/dlq").json()["entries"]) == 2


def test_pages_escape_what_they_show_and_send_a_csp(api, seeded):
    for path in (
        "/",
        "/jobs",
        f"/jobs/{seeded['other'][0]}",
        "/workers",
        "/dlq",
        "/reindex",
        "/search",
    ):
        r = api.get(path)
        assert r.status_code == 200, path
        assert EVIL not in r.text and "<script>alert" not in r.text, path
        csp = r.headers["content-security-policy"]
        assert "script-src 'self' 'nonce-" in csp and "unsafe-inline" not in csp
        assert r.text.count("<script") <= 1  # the dashboard's own file, with the nonce
    assert "&lt;script&gt;" in api.get("/dlq").text
    assert "&lt;script&gt;" in api.get(f"/jobs/{seeded['other'][0]}").text


def test_a_foreign_host_header_is_refused(api, seeded):
    assert api.get("/api/overview", headers={"host": "attacker.example"}).status_code == 400
    assert api.get("/api/overview", headers={"host": "localhost:8765"}).status_code == 200


def test_search_without_a_worker_answers_503(api):
    r = api.get("/api/search?q=hello&collection=docs&mode=dense")
    assert r.status_code == 503 and "no worker" in r.json()["error"]
    assert api.get("/api/search?q=hello&collection=docs&mode=bogus").status_code == 400


def test_every_page_names_an_icon_that_is_served(api, seeded):
    """A browser asks for the page's icon (or /favicon.ico): both answer, so no page logs a 404."""
    for path in ("/", "/jobs", "/workers", "/dlq", "/reindex", "/search"):
        page = api.get(path)
        assert page.status_code == 200 and '<link rel="icon" href="/static/icon.svg"' in page.text
    for path in ("/static/icon.svg", "/favicon.ico"):
        icon = api.get(path)
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")
        assert icon.content.startswith(b"<svg")
