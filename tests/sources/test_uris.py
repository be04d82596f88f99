"""URIs as documents: parsed by the standard library's rules on both sides."""

import pytest

from poolq.wire.files import is_file_document, validate_file
from poolq.wire.uris import UriError, chosen, is_uri, parse_uri


def test_a_uri_names_its_scheme_bucket_and_key():
    u = parse_uri("s3://docs-bucket/manuals/a.pdf")
    assert (u.scheme, u.bucket, u.key, u.is_prefix, u.name) == (
        "s3", "docs-bucket", "manuals/a.pdf", False, "a.pdf",
    )  # fmt: skip
    p = parse_uri("s3://docs-bucket/manuals/")
    assert p.is_prefix and p.object_uri("manuals/b.md") == "s3://docs-bucket/manuals/b.md"
    assert p.relative("manuals/x/b.md") == "x/b.md"
    assert parse_uri("gs://b").is_prefix and not parse_uri("https://example.org/").is_prefix
    assert parse_uri("file:///data/a.txt").key == "data/a.txt"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ftp://host/a", "scheme 'ftp' is not read"),
        ("s3:///key", "no bucket"),
        ("s3://user:secret@bucket/key", "credentials in a URI are not read"),
        ("file://relative/path", "absolute path"),
        ("/data/a.pdf", "not a URI"),
    ],
)
def test_a_bad_uri_is_named_with_why(text, says):
    with pytest.raises(UriError, match=says) as e:
        parse_uri(text)
    assert "secret" not in str(e.value)


def test_paths_are_not_uris():
    assert is_uri("s3://b/k") and is_uri("HTTPS://x/y") and not is_uri("/tmp/s3://x")
    assert not is_uri("docs/a.pdf") and not is_uri("c:\\docs")


def test_objects_are_chosen_as_a_folders_files_are():
    assert chosen("a/b.pdf") is None
    assert chosen("a/b.png") == "not a document"
    assert chosen("a/b.pdf", include=("*.md",)) == "not included"
    assert chosen("drafts/b.md", exclude=("drafts/*",)) == "excluded"
    assert chosen("README.MD", include=("*.md",)) is None


def test_a_file_document_may_be_given_by_uri():
    raw = {"id": "s3://b/k.pdf", "uri": "s3://b/k.pdf", "metadata": {"team": "ops"}}
    assert is_file_document(raw)
    f = validate_file(raw, 0, max_file_bytes=10)
    assert f.uri == "s3://b/k.pdf" and f.source == "s3://b/k.pdf" and f.data is None
    bad = validate_file({"id": "x", "uri": "s3://b/prefix/"}, 0, max_file_bytes=10)
    assert bad.field == "uri" and "prefix" in bad.message
    both = validate_file({"id": "x", "uri": "s3://b/k", "bytes": b"x"}, 0, max_file_bytes=10)
    assert "exactly one of bytes, path and uri" in both.message


def test_a_url_list_names_each_bad_line_and_keeps_the_rest(tmp_path):
    from poolq.ingest.cli.enqueue_uris import prepare_urls

    urls = tmp_path / "urls.txt"
    urls.write_text(
        "# docs\nhttps://example.org/a.html\n\nftp://example.org/b\ns3://bucket/dir/\n"
        "https://example.org/a.html\ns3://bucket/c.pdf\n"
    )
    prep = prepare_urls(urls)
    assert [d["uri"] for d in prep.documents] == ["https://example.org/a.html", "s3://bucket/c.pdf"]
    lines = [p.line() for p in prep.problems]
    assert lines[0].startswith(f"{urls}:4: ") and "'ftp'" in lines[0]
    assert lines[1].startswith(f"{urls}:5: ") and "a prefix" in lines[1]
    assert lines[2].startswith(f"{urls}:6: ") and "first at" in lines[2] and f"{urls}:2" in lines[2]
    assert prep.read == 5


def test_the_client_refuses_a_bad_uri_before_enqueueing():
    from poolq.wire.job_plan import Limits, check_files

    with pytest.raises(ValueError, match=r"file 'x': uri: .*scheme 'ftp'.*nothing was enqueued"):
        check_files([{"id": "x", "uri": "ftp://h/a.pdf"}], Limits())
    check_files([{"id": "y", "uri": "s3://b/a.pdf"}], Limits())


def test_an_object_key_keeps_question_marks_and_hashes():
    u = parse_uri("s3://b/notes/q?a#1.md")
    assert (u.bucket, u.key, u.is_prefix) == ("b", "notes/q?a#1.md", False)
    assert u.object_uri(u.key) == "s3://b/notes/q?a#1.md"
