"""The pooling layer: flat hidden states of a packed batch -> one output per request."""

from worker.pooling.dispatch import DispatchPooler
from worker.pooling.heads import ClassifierHead, EmbeddingHead, TokenEmbedHead
from worker.pooling.metadata import PoolingCursor, PoolingMetadata, PoolingStates
from worker.pooling.methods import AllPool, CLSPool, LastPool, MeanPool, StepPool, sequence_method
from worker.pooling.multi_output import TokenWeightSparsePooler, multi_output_pooler
from worker.pooling.outputs import PoolerOutput, SparseEmbedding
from worker.pooling.params import PoolingParams, PoolingParamsError
from worker.pooling.poolers import Pooler, SequencePooler, TokenPooler
from worker.pooling.splade import SpladePooler
from worker.pooling.tasks import POOLING_TASKS, PoolingTask, parse_task

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
    "PoolingStates",
    "PoolingTask",
    "SequencePooler",
    "SparseEmbedding",
    "SpladePooler",
    "StepPool",
    "TokenEmbedHead",
    "TokenPooler",
    "TokenWeightSparsePooler",
    "multi_output_pooler",
    "parse_task",
    "sequence_method",
]
