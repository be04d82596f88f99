"""The sparse density check at load: a masked-LM (SPLADE) head that is positive on much of the
vocabulary makes every text a vector of thousands of terms, and jobs slow to a crawl. At load
the model encodes a few fixed texts (the start of the int8 calibration sample) and, when they
average more than :data:`DENSE_TERMS_WARN` non-zero terms, logs one warning naming the model,
the mean and the options that bound it (``max_terms``, ``min_weight``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
from poolq.worker.pooling import SpladePooler
from poolq.worker.pooling.outputs import SparseEmbedding

if TYPE_CHECKING:
    from poolq.worker.engine.checkpoints.loader import PoolingModel

log = logging.getLogger("poolq.models")

DENSE_TERMS_WARN = 2000  # mean non-zero terms per text above which the load warns
SAMPLE_TEXTS = 8  # texts of the calibration sample encoded at load


def check_sparse_density(model: PoolingModel) -> float | None:
    """Mean non-zero terms per text of the model's SPLADE output on the sample (None: no
    masked-LM sparse head), with a warning above :data:`DENSE_TERMS_WARN`."""
    if not isinstance(model.pooler.poolers_by_task.get("sparse"), SpladePooler):
        return None
    from poolq.worker.engine.cpu.int8_gate import encode_texts

    counts = []
    for out in encode_texts(model, CALIBRATION_TEXTS[:SAMPLE_TEXTS], ["sparse"]):
        sparse = out["sparse"]
        assert isinstance(sparse, SparseEmbedding)
        counts.append(int((sparse.values != 0).sum()))
    mean = sum(counts) / len(counts)
    if mean > DENSE_TERMS_WARN:
        log.warning(
            "model %s: its sparse head averages %.0f non-zero terms per text on %d sample texts "
            "(over %d of a %d-term vocabulary): jobs will be slow and points large; bound it "
            "with max_terms (keep the top terms) or min_weight (drop smaller weights)",
            model.description.model_id,
            mean,
            SAMPLE_TEXTS,
            DENSE_TERMS_WARN,
            model.description.vocab_size,
        )
    return mean
