"""The corpus of ``soak.py``: standard-library passages as documents (one in eight a multi-chunk
document of ten passages, copies made distinct once the passages run out) until they hold the
chunks asked for, each one's chunk count computed with the worker's own chunker."""

from __future__ import annotations

from poolq.ingest.sample_corpus import passages
from poolq.worker.config.settings import Settings
from poolq.worker.runtime.vectorizer import Vectorizer


async def chunk_counter():
    """The worker's chunker (default profile), loaded here once, to size the corpus exactly."""
    vec = await Vectorizer.start(Settings().profile)
    await vec.stop()  # the chunker only needs the tokenizers
    return vec.chunk


def corpus(target_chunks: int, count_chunks, prefix: str) -> tuple[list[dict], dict[str, int]]:
    """Documents holding at least ``target_chunks`` chunks, and each one's expected chunk count.
    Passages repeat once the ~2,000 distinct ones are used up; each copy is made distinct."""
    base = passages(100_000)
    memo: dict[str, int] = {}
    docs: list[dict] = []
    expected: dict[str, int] = {}
    total = 0
    i = 0
    while total < target_chunks:
        copy = i // len(base)
        if i % 8:
            text = base[i % len(base)]
        else:  # a multi-chunk document: ten passages as paragraphs
            text = "\n\n".join(base[(i + k) % len(base)] for k in range(10))
        if copy:
            text = f"(copy {copy}) {text}"
        n = memo.get(text)
        if n is None:
            n = memo[text] = len(count_chunks(text))
        doc_id = f"{prefix}-{i:06d}"
        docs.append({"id": doc_id, "text": text, "metadata": {"i": i, "copy": copy}})
        expected[doc_id] = n
        total += n
        i += 1
    return docs, expected
