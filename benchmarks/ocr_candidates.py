"""The OCR candidates of docs/parse-libraries.md: Tesseract 5 through tesserocr (in process)
and through pytesseract (the ``tesseract`` command, a process a page), and RapidOCR on ONNX
Runtime (``rapidocr-onnxruntime``, its models in the wheel), on the same rendered pages.

    python benchmarks/ocr_candidates.py render            # pages of 5 manuals, 150/200/300 dpi
    python benchmarks/ocr_candidates.py tesserocr
    OMP_THREAD_LIMIT=1 python benchmarks/ocr_candidates.py pytesseract
    /tmp/rapid/bin/python benchmarks/ocr_candidates.py rapidocr   # its own venv (see the page)

Four pages (at a fifth, a third, a half and two thirds) of each PDF manual of
``eval_documents_corpus.py`` are rendered grey with pypdfium2 into ``build/ocr-candidates``;
each engine reads them with one thread (``OMP_NUM_THREADS=1``; Debian's ``tesseract`` command
needs ``OMP_THREAD_LIMIT=1``) and prints, by resolution, the CPU seconds a page (its own and its
child processes'), the character error rate against the page's text layer (NFKC, whitespace
collapsed, line-end hyphens joined) and its peak RSS above its start.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import sys
import time
import unicodedata
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "ocr-candidates"
TESSDATA = "/usr/share/tesseract-ocr/5/tessdata"


def norm(t: str) -> str:
    t = unicodedata.normalize("NFKC", t).replace("\ufffe", "").replace("\u00ad", "")
    return " ".join(re.sub(r"-\s*\n\s*", "", t).split())


def hwm_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) // 1024 for x in f if x.startswith("VmHWM"))


def render() -> None:
    import pypdfium2 as pdfium

    sys.path.insert(0, str(ROOT))
    from benchmarks.eval_documents_corpus import DEFAULT_CACHE, REAL
    from benchmarks.parse_corpus import fetch

    OUT.mkdir(parents=True, exist_ok=True)
    meta = []
    for path, package, inner in REAL:
        if not path.endswith(".pdf"):
            continue
        tree, _ = fetch(package, DEFAULT_CACHE)
        data = (tree / inner).read_bytes()
        pdf = pdfium.PdfDocument(gzip.decompress(data) if inner.endswith(".gz") else data)
        n, name = len(pdf), Path(path).stem
        for i in (n // 5, n // 3, n // 2, 2 * n // 3):
            page = pdf[i]
            text = page.get_textpage().get_text_range()
            for dpi in (150, 200, 300):
                f = OUT / f"{name}-{i + 1}-{dpi}.png"
                page.render(scale=dpi / 72, grayscale=True).to_pil().save(f)
                meta.append({"file": str(f), "dpi": dpi, "text": text, "doc": name, "page": i + 1})
    (OUT / "meta.json").write_text(json.dumps(meta))
    print(f"{len(meta)} page images in {OUT}")


def engine(name: str):
    if name == "tesserocr":
        import tesserocr

        api = tesserocr.PyTessBaseAPI(path=TESSDATA, lang="eng")

        def run(img):
            api.SetImage(img)
            return api.GetUTF8Text()

        return run
    if name == "pytesseract":
        import pytesseract

        return lambda img: pytesseract.image_to_string(
            img, lang="eng", config=f"--tessdata-dir {TESSDATA}"
        )
    if name == "rapidocr":
        import numpy as np
        from rapidocr_onnxruntime import RapidOCR

        eng = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
        return lambda img: "\n".join(r[1] for r in (eng(np.array(img.convert("RGB")))[0] or []))
    raise SystemExit(f"unknown engine {name!r}")


def measure(name: str) -> None:
    from PIL import Image
    from rapidfuzz.distance import Levenshtein

    meta = json.loads((OUT / "meta.json").read_text())
    rss0 = hwm_mb()
    run = engine(name)
    run(Image.new("L", (200, 60), 255))  # the model loads
    rows: dict[int, list[tuple[float, float]]] = {}
    for m in meta:
        img = Image.open(m["file"])
        img.load()
        c0, k0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        got = run(img)
        k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = time.process_time() - c0 + (k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime)
        ref = norm(m["text"])
        rows.setdefault(m["dpi"], []).append((cpu, Levenshtein.distance(norm(got), ref) / len(ref)))
    for dpi, r in sorted(rows.items()):
        cers = sorted(c for _, c in r)
        print(
            f"{name} {dpi} dpi: {sum(c for c, _ in r) / len(r):.2f} CPU s a page, CER mean "
            f"{sum(cers) / len(cers):.2%}, median {cers[len(cers) // 2]:.2%}, max {cers[-1]:.2%}"
        )
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    print(f"{name}: peak RSS +{hwm_mb() - rss0} MB (child processes' peak {kids} MB)")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "render"
    render() if what == "render" else measure(what)
