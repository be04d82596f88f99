"""The fingerprint cache: the same value as hashing the folder, no second read of unchanged
files, and a new hash when a covered file changes (size or mtime)."""

import os

import pytest

from poolq.worker.engine.checkpoints import fingerprints
from poolq.worker.engine.checkpoints.fingerprints import cached_fingerprint, checkpoint_fingerprint


@pytest.fixture
def folder(tmp_path, process_options):
    process_options(cache_dir=str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert"}')
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    (model / "README.md").write_text("not covered")
    return model


def test_cached_fingerprint_hashes_once_until_a_covered_file_changes(folder, monkeypatch):
    calls = []

    def counting(path):
        calls.append(path)
        return checkpoint_fingerprint(path)

    monkeypatch.setattr(fingerprints, "checkpoint_fingerprint", counting)
    first = cached_fingerprint(folder)
    assert first == checkpoint_fingerprint(folder) and len(calls) == 1
    assert cached_fingerprint(folder) == first and len(calls) == 1  # from the cache
    (folder / "README.md").write_text("changed, but not covered")
    assert cached_fingerprint(folder) == first and len(calls) == 1
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\1" * 4096)  # same size: the mtime tells
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = cached_fingerprint(folder)
    assert len(calls) == 2 and second != first and second == checkpoint_fingerprint(folder)


def test_an_unwritable_cache_still_gives_the_fingerprint(folder, process_options, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    process_options(cache_dir=str(blocker / "sub"))  # a file where a folder should be
    assert cached_fingerprint(folder) == checkpoint_fingerprint(folder)
