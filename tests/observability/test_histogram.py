"""The histograms the engine's threads fill: bucket placement on and between bounds, cumulative
snapshots ending at +Inf, sums, batches of values, and exact counts under concurrent writers."""

import threading

import pytest

from poolq.worker.observability.histogram import (
    ENGINE_STAGES,
    FILL_BUCKETS,
    SECONDS_BUCKETS,
    STAGES,
    TOKENS_BUCKETS,
    EngineMetrics,
    Histogram,
)


def test_buckets_are_sorted_and_stages_end_with_write():
    for bounds in (SECONDS_BUCKETS, TOKENS_BUCKETS, FILL_BUCKETS):
        assert list(bounds) == sorted(set(bounds))
    assert TOKENS_BUCKETS[0] == 16 and TOKENS_BUCKETS[-1] == 131072
    assert FILL_BUCKETS[-1] == 1.0
    assert STAGES == ("tokenize", "queue_wait", "forward", "pool", "write")
    assert STAGES[:-1] == ENGINE_STAGES


def test_values_fall_in_le_buckets_and_snapshot_is_cumulative():
    h = Histogram((1.0, 2.0, 5.0))
    for v in (0.5, 1.0, 1.5, 2.0, 4.9, 5.0, 7.0, 100.0):
        h.observe(v)
    buckets, total = h.snapshot()
    # a value on a bound counts in that bound's bucket (Prometheus le: "less or equal")
    assert buckets == [("1.0", 2), ("2.0", 4), ("5.0", 6), ("+Inf", 8)]
    assert total == pytest.approx(121.9)
    assert h.count == 8


def test_empty_histogram_has_every_bucket_at_zero():
    h = Histogram(SECONDS_BUCKETS)
    buckets, total = h.snapshot()
    assert [le for le, _ in buckets] == [repr(b) for b in SECONDS_BUCKETS] + ["+Inf"]
    assert all(c == 0 for _, c in buckets)
    assert total == 0.0 and h.count == 0


def test_observe_many_equals_observing_one_by_one():
    values = [0.0001, 0.003, 0.003, 0.2, 61.0, 0.0005]
    one, many = Histogram(SECONDS_BUCKETS), Histogram(SECONDS_BUCKETS)
    for v in values:
        one.observe(v)
    many.observe_many(iter(values))  # any iterable, consumed once
    assert one.snapshot() == many.snapshot()
    many.observe_many([])
    assert many.count == len(values)


def test_concurrent_writers_lose_no_observation():
    h = Histogram(TOKENS_BUCKETS)
    n_threads, per_thread = 8, 2000
    start = threading.Barrier(n_threads)

    def write(k: int) -> None:
        start.wait()
        for i in range(per_thread):
            if i % 2:
                h.observe(float(k + i))
            else:
                h.observe_many([1.0, 2.0**17 + 1])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = n_threads * (per_thread // 2) * 3
    buckets, total = h.snapshot()
    assert h.count == expected and buckets[-1] == ("+Inf", expected)
    # the values above the last bound: one per observe_many call
    assert buckets[-1][1] - buckets[-2][1] == n_threads * per_thread // 2
    sum_single = sum(k + i for k in range(n_threads) for i in range(1, per_thread, 2))
    sum_many = n_threads * (per_thread // 2) * (1.0 + 2.0**17 + 1)
    assert total == pytest.approx(sum_single + sum_many)


def test_engine_metrics_records_a_batch_in_every_engine_stage():
    em = EngineMetrics(max_batch_tokens=1000)
    em.tokenized(0.002)
    em.batch(500, [0.01, 0.02, 0.3], forward_s=0.05, pool_s=0.001)
    em.batch(1000, [0.001], forward_s=0.07, pool_s=0.002)
    counts = {stage: h.count for stage, h in em.stages()}
    assert tuple(counts) == ENGINE_STAGES
    assert counts == {"tokenize": 1, "queue_wait": 4, "forward": 2, "pool": 2}  # waits per text
    assert em.batch_tokens.snapshot()[1] == 1500
    fill = dict(em.fill_ratio.snapshot()[0])
    assert fill["0.4"] == 0 and fill["0.5"] == 1 and fill["0.95"] == 1 and fill["1.0"] == 2
    assert em.forward.snapshot()[1] == pytest.approx(0.12)
