import pickle

import pytest

from poolq.wire.records.errors import failure_of
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.config.profile import DEFAULT_PROFILE, Profile
from poolq.worker.config.settings import load_settings


def test_precedence_file_then_env_then_flags(tmp_path):
    cfg = tmp_path / "poolq.toml"
    cfg.write_text(
        '[worker]\nredis_url = "redis://file:1/0"\nmax_jobs = 7\nqdrant_path = "/from/file"\n'
        '[vectors]\ndense = { model = "bundled:all-minilm-l6-v2", task = "embed", dimensions = 128 }\n'
        "[chunking]\noverlap_tokens = 8\n"
    )
    s = load_settings(cfg, environ={})
    assert (s.redis_url, s.max_jobs, s.qdrant_path) == ("redis://file:1/0", 7, "/from/file")
    assert [v.name for v in s.profile.vectors] == ["dense"] and s.profile.vectors[
        0
    ].dimensions == 128
    assert s.profile.chunk_overlap_tokens == 8
    env = {
        "POOLQ_REDIS_URL": "redis://env:2/0",
        "POOLQ_MAX_JOBS": "9",
        "POOLQ_QDRANT_URL": "http://q:6333",
    }
    s = load_settings(cfg, environ=env)
    assert (s.redis_url, s.max_jobs, s.qdrant_url) == ("redis://env:2/0", 9, "http://q:6333")
    s = load_settings(cfg, {"redis_url": "redis://flag:3/0", "max_jobs": None}, environ=env)
    assert (s.redis_url, s.max_jobs) == ("redis://flag:3/0", 9)
    s = load_settings(None, environ={"POOLQ_CONFIG": str(cfg)})
    assert s.max_jobs == 7


def test_bad_settings_are_named(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_settings(tmp_path / "missing.toml", environ={})
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[worker]\nnope = 1\n")
    with pytest.raises(ValueError, match=r"unknown keys \['nope'\]"):
        load_settings(cfg, environ={})
    with pytest.raises(ValueError, match=r"^POOLQ_MAX_JOBS: expected an integer, got 'many'$"):
        load_settings(None, environ={"POOLQ_MAX_JOBS": "many"})
    with pytest.raises(ValueError, match="redis_url: expected a redis://"):
        load_settings(None, {"redis_url": "http://x"}, environ={})


def test_profile_defaults_and_errors():
    assert [(v.name, v.task) for v in DEFAULT_PROFILE.vectors] == [
        ("dense", "embed"),
        ("colbert", "token_embed"),
        ("sparse", "sparse"),
    ]
    assert DEFAULT_PROFILE.models == ["bundled:all-minilm-l6-v2", "bundled:splade-tiny"]
    p = Profile.from_dict({"vectors": {"s": {"task": "sparse"}}})
    assert p.vectors[0].model == "bundled:splade-tiny"
    with pytest.raises(ValueError, match=r"vector 'x': task 'score' produces scores.*\[reranker\]"):
        Profile.from_dict({"vectors": {"x": {"task": "score"}}})
    with pytest.raises(ValueError, match="vector 'x': unknown task 'scores'"):
        Profile.from_dict({"vectors": {"x": {"task": "scores"}}})
    with pytest.raises(ValueError, match="unknown keys"):
        Profile.from_dict({"vectors": {"x": {"task": "embed", "size": 3}}})


def test_msgpack_round_trip_and_pickle_refused():
    job = {
        "t": 1,
        "f": "ingest",
        "a": ["c", [{"id": "a", "text": "x", "metadata": {"k": [1, 2]}}]],
        "k": {},
        "et": 123,
    }
    assert deserialize(serialize(job)) == job
    err = deserialize(serialize({"r": ValueError("bad input")}))["r"]
    assert failure_of(err).text() == "ValueError: bad input"
    with pytest.raises(ValueError):  # msgpack's decoding errors are ValueErrors
        deserialize(pickle.dumps(job))


def test_defaults_come_from_the_wire_constants():
    from poolq.wire import constants
    from poolq.worker.config.settings import Settings

    s = Settings()
    assert s.qdrant_path == constants.DEFAULT_QDRANT_PATH == "./poolq_data/qdrant"
    assert s.redis_url == constants.DEFAULT_REDIS_URL
    assert (
        (s.max_documents_per_job, s.max_document_bytes, s.max_job_bytes)
        == (
            constants.MAX_DOCUMENTS_PER_JOB,
            constants.MAX_DOCUMENT_BYTES,
            constants.MAX_JOB_BYTES,
        )
        == (1000, 1 << 20, 64 << 20)
    )


def test_metrics_listen_on_loopback_unless_widened(tmp_path):
    assert load_settings(None, environ={}).metrics_host == "127.0.0.1"
    s = load_settings(None, environ={"POOLQ_METRICS_HOST": "0.0.0.0"})
    assert s.metrics_host == "0.0.0.0"
    assert load_settings(None, {"metrics_host": "::1"}, environ={}).metrics_host == "::1"
    cfg = tmp_path / "old.toml"
    cfg.write_text('[worker]\nmetrics_addr = "0.0.0.0"\n')  # the old name: refused, by name
    with pytest.raises(ValueError, match=r"unknown keys \['metrics_addr'\]"):
        load_settings(cfg, environ={})


def test_bad_urls_are_named_in_one_line():
    with pytest.raises(ValueError) as e:
        load_settings(None, {"redis_url": "http://user:pw@x:6379"}, environ={})
    assert str(e.value) == (
        "redis_url: expected a redis://, rediss:// or unix:// URL, got 'http://***@x:6379'"
    )
    with pytest.raises(ValueError, match="expected a numeric port"):
        load_settings(None, {"redis_url": "redis://x:port/0"}, environ={})
    with pytest.raises(ValueError) as e:
        load_settings(None, environ={"POOLQ_QDRANT_URL": "ftp://q:6333"})
    assert "qdrant_url: expected an http://, https://, grpc:// or grpcs:// URL" in str(e.value)
    assert "'ftp://q:6333'" in str(e.value)
    with pytest.raises(ValueError, match="qdrant_url"):
        load_settings(None, {"qdrant_url": "http://"}, environ={})
    assert load_settings(None, {"qdrant_url": "https://q.example"}, environ={}).qdrant_url


def test_qdrant_transport_and_grpc_urls():
    """A server is spoken to over gRPC unless ``qdrant_transport = "rest"``; each wrong
    combination is one line naming the setting."""
    from poolq.sinks.store.server_target import server_target

    s = load_settings(None, environ={"POOLQ_QDRANT_URL": "grpc://q:7334"})
    assert (s.qdrant_transport, s.qdrant_url) == ("grpc", "grpc://q:7334")
    t = server_target("https://q.example", s.qdrant_transport, None)
    assert (t.host, t.grpc_port, t.tls, t.shown) == (
        "q.example",
        6334,
        True,
        "grpcs://q.example:6334",
    )
    assert server_target("http://q:6333", "rest").shown == "http://q:6333"
    assert server_target("http://q:6333", "grpc", 7000).grpc_port == 7000
    empty = load_settings(
        None, environ={"POOLQ_QDRANT_TRANSPORT": "", "POOLQ_QDRANT_URL": "grpc://q"}
    )
    assert empty.qdrant_transport == "grpc"  # an empty variable is the default
    bad = [
        ({"POOLQ_QDRANT_TRANSPORT": "soap"}, "POOLQ_QDRANT_TRANSPORT: expected one of grpc, rest"),
        (
            {"POOLQ_QDRANT_TRANSPORT": "rest", "POOLQ_QDRANT_URL": "grpc://q:1"},
            "needs an http:// or https:// URL",
        ),
        (
            {"POOLQ_QDRANT_GRPC_PORT": "7000", "POOLQ_QDRANT_URL": "grpc://q:1"},
            "qdrant_grpc_port is for an http(s):// URL",
        ),
        (
            {"POOLQ_QDRANT_WRITES_IN_FLIGHT": "0"},
            "POOLQ_QDRANT_WRITES_IN_FLIGHT: expected an integer >= 1",
        ),
    ]
    for environ, message in bad:
        with pytest.raises(ValueError) as e:
            load_settings(None, environ=environ)
        assert message in str(e.value) and "\n" not in str(e.value)
