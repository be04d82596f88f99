"""What a document may make a worker read (worker/parse/file_reader.py), without a worker: paths
only where they resolve inside the roots (none set: nowhere), URIs only under an allowed prefix
that ends at a '/', and the roots and prefixes a worker's own schedule adds."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.file_reader import (
    NO_ROOTS,
    Forbidden,
    allowed,
    read_confined,
    uri_allowed,
)


def test_a_path_is_read_only_where_it_resolves_inside_the_roots(tmp_path):
    root, outside = tmp_path / "docs", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("inside")
    (outside / "s.txt").write_text("secret")
    (root / "link.txt").symlink_to(outside / "s.txt")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    roots = (root.resolve(),)
    assert read_confined(str(root / "a.txt"), roots, 100) == b"inside"
    for escape in (
        "/etc/passwd",
        f"{root}/../secret/s.txt",
        f"{root}/link.txt",
        f"{root}/sub/s.txt",
    ):
        with pytest.raises(Forbidden, match="source_roots") as e:
            read_confined(escape, roots, 100)
        assert e.value.code == ErrorCode.FORBIDDEN
    with pytest.raises(Forbidden) as none:
        read_confined(str(root / "a.txt"), (), 100)
    assert str(none.value) == NO_ROOTS and "--source-roots" in NO_ROOTS
    with pytest.raises(ParseError) as big:
        read_confined(str(root / "a.txt"), roots, 3)
    assert big.value.code == ErrorCode.TOO_LARGE


def test_a_uri_is_allowed_only_under_a_prefix_that_ends_at_a_slash():
    allowed_uris = ("s3://docs", "https://intranet.example/wiki/")
    assert uri_allowed("s3://docs/a.md", allowed_uris)
    assert uri_allowed("https://intranet.example/wiki/page", allowed_uris)
    for uri in ("s3://docs-copy/a.md", "https://intranet.example/wikileaks", "s3://other/a.md"):
        assert not uri_allowed(uri, allowed_uris), uri
    assert not uri_allowed("s3://docs/a.md", ())


def test_a_workers_own_schedule_adds_its_sources(tmp_path):
    settings = SimpleNamespace(source_roots=None, source_uris="s3://a/, https://h/")
    roots, uris = allowed(settings, [str(tmp_path), "s3://b/kb/"])
    assert roots == (tmp_path.resolve(),) and uris == ("s3://a/", "https://h/", "s3://b/kb/")
    assert allowed(SimpleNamespace(source_roots=None, source_uris=None)) == ((), ())
