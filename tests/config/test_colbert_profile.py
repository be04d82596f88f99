"""A profile with a real ColBERT checkpoint: chunks fit the document form (marker included),
so nothing is truncated, and queries are encoded in the query form (expanded to query_maxlen)."""

import pytest

from poolq.worker.config.profile import Profile
from poolq.worker.runtime.vectorizer import Vectorizer


@pytest.fixture
async def vectorizer(colbert, minilm):
    profile = Profile.from_dict(
        {
            "vectors": {
                "dense": {"model": minilm, "task": "embed"},
                "colbert": {"model": colbert, "task": "token_embed"},
            }
        }
    )
    v = await Vectorizer.start(profile, device="cpu")
    yield v
    await v.stop()


async def test_chunks_fit_the_document_form_and_queries_use_the_query_form(vectorizer):
    engine = next(e for m, e in vectorizer.engines.items() if "colbert" in m)
    forms = engine.description.input_forms
    assert forms is not None and engine.description.input_forms is not None
    text = " ".join(f"word{i} and some more text." for i in range(400))  # far over 220 tokens
    chunks = vectorizer.chunk(text)
    assert len(chunks) > 2
    results = await engine.encode([c.text for c in chunks], ["token_embed"])
    assert not any(r.truncated for r in results)  # the document form's limit was respected
    assert all(r.num_tokens <= forms.document.max_length for r in results)

    q = await vectorizer.encode_query("where is the harbour crane", ["colbert", "dense"])
    assert q["colbert"].shape == (forms.query.max_length, 128)  # expanded with [MASK]
    assert q["dense"].shape == (384,)
