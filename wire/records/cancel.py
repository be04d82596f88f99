"""What cancelling one job did (:meth:`PoolqClient.cancel
<poolq.ingest.client.PoolqClient.cancel>`, ``poolq cancel``, ``POST /api/jobs/{id}/cancel``).
Its map is the command's JSON line, ``{"job_id", "state"}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from poolq.wire.records.record import WireRecord

# cancelled: it was queued and will not run; cancelling: it runs and stops at its next batch
# boundary; finished: it had ended already (nothing changed); not_found: no such job
CancelState = Literal["cancelled", "cancelling", "finished", "not_found"]


@dataclass(frozen=True)
class CancelRequest(WireRecord):
    wire_name = "cancel request"

    job_id: str
    state: CancelState
