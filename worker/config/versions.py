"""Profile versions: what a point's vectors depend on, as one short hash.

A point records the version of the profile that encoded it. The version covers each vector's
definition (name, model, task, dimensions, normalisation, top_k, a pool_factor above 1), each
label's (name, model, threshold), the chunking, and a fingerprint
of each model's files (config, tokenizer, weights), so changing a model's weights in place is
seen too. Reindexing re-encodes the documents whose points carry another version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from poolq.worker.config.profile import Profile


def profile_version(profile: Profile, fingerprints: Mapping[str, str]) -> str:
    """16 hex digits; ``fingerprints`` maps each profile model name to its checkpoint's."""
    spec = {
        "vectors": [
            # min_weight only when set: the versions of profiles without it do not change
            [v.name, v.model, fingerprints[v.model], v.task, v.dimensions, v.normalize, v.top_k]
            + ([v.min_weight] if v.min_weight is not None else [])
            # only when set: versions written before pool_factor existed stay the same
            + ([v.pool_factor] if (v.pool_factor or 1) > 1 else [])
            for v in profile.vectors
        ],
        "models": {m: profile.model_options.get(m, {}) for m in profile.models},
        "chunking": [profile.chunk_max_tokens, profile.chunk_overlap_tokens],
    }
    if profile.labels:  # only then: the versions of profiles without labels stay the same
        spec["labels"] = [
            [x.name, x.model, fingerprints[x.model], x.threshold] for x in profile.labels
        ]
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
