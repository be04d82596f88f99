"""What the test machine's CPU does natively, for tests whose expectations depend on it.

int8 on x86 CPUs without VNNI: the kernels multiply uint8 activations by int8 weights with
``vpmaddubsw``, whose int16 pair sums saturate; poolq quantizes activations to 7 bits there
(``reduce_range``, as PyTorch's x86 dynamic quantization does), which costs accuracy. The
quality figures the README documents for int8 were measured on a VNNI CPU; on an AVX2-only one
(an AMD EPYC Zen 3 here) the quality gate refuses MiniLM's token vectors (mean cosine 0.9889
against the 0.99 floor), as it should. Tests of int8 quality therefore need VNNI; tests of
something else that merely loads an int8 model use :data:`LENIENT_INT8` floors.
"""

import pytest

from poolq.worker.engine.checkpoints.description import Int8Floors
from poolq.worker.engine.cpu.cpu_features import has_vnni

VNNI = has_vnni()
needs_vnni = pytest.mark.skipif(
    not VNNI, reason="int8 quality figures hold on CPUs with VNNI; this one has none"
)
LENIENT_INT8 = Int8Floors(
    min_cosine=0.5, mean_cosine=0.5, token_min_cosine=0.5, token_mean_cosine=0.5
)
