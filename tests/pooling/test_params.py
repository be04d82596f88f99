import pytest

from poolq.worker.pooling import PoolingParams, PoolingParamsError, parse_task
from poolq.worker.pooling.dispatch import DispatchPooler
from poolq.worker.pooling.heads import EmbeddingHead
from poolq.worker.pooling.methods import CLSPool
from poolq.worker.pooling.poolers import SequencePooler
from tests.pooling.builders import EMBED_DIM, four_task_pooler


@pytest.mark.parametrize("name", ["encode", "nope", "", None, 3])
def test_unknown_tasks_rejected_with_supported_list(name):
    with pytest.raises(
        ValueError, match="supported tasks: embed, sparse, token_embed, classify, score"
    ):
        PoolingParams(task=name)


def test_old_names_get_a_hint():
    assert parse_task("score") == "score"  # a task of its own: (query, text) pairs
    with pytest.raises(ValueError, match="'embed' for one vector"):
        parse_task("encode")


def test_params_fields_validated():
    with pytest.raises(ValueError, match="dimensions applies to task 'embed' only"):
        PoolingParams("sparse", dimensions=4)
    with pytest.raises(ValueError, match="top_k applies to task 'sparse' only"):
        PoolingParams("embed", top_k=4)
    with pytest.raises(ValueError, match="top_k must be a positive int"):
        PoolingParams("sparse", top_k=0)
    with pytest.raises(ValueError, match="use_activation must be"):
        PoolingParams("embed", use_activation="yes")  # type: ignore[arg-type]


def test_bad_requests_named_with_allowed_values():
    pooler = four_task_pooler()
    ok = PoolingParams("embed", dimensions=EMBED_DIM)
    with pytest.raises(
        PoolingParamsError, match=r"request 'doc-7': dimensions=13 out of range; allowed: 1\.\.12"
    ):
        pooler.validate([ok, PoolingParams("embed", dimensions=13)], ["doc-1", "doc-7"])
    with pytest.raises(PoolingParamsError, match=r"request #1: dimensions=0 out of range"):
        pooler.validate([ok, PoolingParams("embed", dimensions=0)])
    pooler.validate([ok, PoolingParams("embed", dimensions=1)])


def test_task_not_supported_by_model_is_named():
    pooler = DispatchPooler({"embed": SequencePooler(CLSPool(), EmbeddingHead(8))})
    with pytest.raises(
        PoolingParamsError,
        match=r"request 'q': task 'sparse' is not supported by this model; supported tasks: embed",
    ):
        pooler.validate([PoolingParams("sparse")], ["q"])


def test_matryoshka_rules():
    EmbeddingHead(8).check_params(PoolingParams("embed", dimensions=4))  # undeclared: any 1..8
    with pytest.raises(ValueError, match=r"dimensions=9 out of range; allowed: 1\.\.8"):
        EmbeddingHead(8).check_params(PoolingParams("embed", dimensions=9))
    refuses = EmbeddingHead(8, is_matryoshka=False)
    with pytest.raises(ValueError, match="declares it does not support Matryoshka"):
        refuses.check_params(PoolingParams("embed", dimensions=4))
    listed = EmbeddingHead(8, matryoshka_dims=[2, 4, 8])
    listed.check_params(PoolingParams("embed", dimensions=4))
    with pytest.raises(
        ValueError, match=r"dimensions=3 is not allowed by this model; allowed: \[2, 4, 8\]"
    ):
        listed.check_params(PoolingParams("embed", dimensions=3))


def test_dispatch_rejects_mismatched_sub_pooler():
    with pytest.raises(ValueError, match="supports \\['embed'\\], not 'sparse'"):
        DispatchPooler({"sparse": SequencePooler(CLSPool(), EmbeddingHead(8))})
    with pytest.raises(ValueError, match="unknown task 'rerank'"):
        DispatchPooler({"rerank": SequencePooler(CLSPool(), EmbeddingHead(8))})
