"""The pooling layer: flat hidden states of a packed batch -> one output per request."""

from poolq.worker.pooling.dispatch import DispatchPooler
from poolq.worker.pooling.heads import (
    ClassifierHead,
    EmbeddingHead,
    ScoreHead,
    TokenEmbedHead,
    TokenOdds,
)
from poolq.worker.pooling.metadata import PoolingCursor, PoolingMetadata
from poolq.worker.pooling.methods import AllPool, CLSPool, LastPool, MeanPool, sequence_method
from poolq.worker.pooling.multi_output import TokenWeightSparsePooler, multi_output_pooler
from poolq.worker.pooling.outputs import PoolerOutput, SparseEmbedding
from poolq.worker.pooling.params import PoolingParams, PoolingParamsError
from poolq.worker.pooling.poolers import Pooler, SequencePooler, TokenPooler
from poolq.worker.pooling.splade import SpladePooler
from poolq.worker.pooling.stacked import StackedPooler
from poolq.worker.pooling.tasks import POOLING_TASKS, PoolingTask, parse_task

__all__ = [
    "POOLING_TASKS",
    "AllPool",
    "CLSPool",
    "ClassifierHead",
    "DispatchPooler",
    "EmbeddingHead",
    "LastPool",
    "MeanPool",
    "Pooler",
    "PoolerOutput",
    "PoolingCursor",
    "PoolingMetadata",
    "PoolingParams",
    "PoolingParamsError",
    "PoolingTask",
    "ScoreHead",
    "SequencePooler",
    "SparseEmbedding",
    "SpladePooler",
    "StackedPooler",
    "TokenEmbedHead",
    "TokenOdds",
    "TokenPooler",
    "TokenWeightSparsePooler",
    "multi_output_pooler",
    "parse_task",
    "sequence_method",
]
