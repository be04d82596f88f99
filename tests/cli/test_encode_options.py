"""``poolq encode`` refuses a bad --dtype before loading anything, naming every accepted one."""

from __future__ import annotations

from typer.testing import CliRunner

from poolq.worker.cli import app


def test_dtype_error_names_every_accepted_dtype(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "x"}\n')
    result = CliRunner().invoke(app, ["encode", str(src), "--model", "nowhere", "--dtype", "int4"])
    assert result.exit_code == 2
    out = result.output
    assert "--dtype" in out and "int4" in out
    for dtype in ("auto", "float32", "bfloat16", "float16", "int8"):
        assert dtype in out, out
