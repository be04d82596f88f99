"""The Points service: upsert, delete, retrieve, set payload, payload indexes, scroll, count,
and the Query API (plain and grouped), each one store call (``EdgeServerStore``).

Writes: the store returns once the operation is in Edge's WAL and applied, whatever ``wait``
says; the answer's status is what a server answers (COMPLETED with ``wait``, else
ACKNOWLEDGED). After each write the store's maintenance may start building indexes in the
background (``EdgeStore.maintain``), as a server's optimizers would.
"""

from __future__ import annotations

import itertools
from typing import Any

from qdrant_client import grpc, models
from qdrant_client.conversions.conversion import GrpcToRest as G
from qdrant_client.grpc.points_service_pb2_grpc import PointsServicer

from tests.support.edge_server import EdgeServerStore
from tests.support.qdrant_endpoint import convert as cv
from tests.support.qdrant_endpoint.status import invalid, refuse, rpc

_FIELD_TYPES = {
    grpc.FieldType.FieldTypeKeyword: models.PayloadSchemaType.KEYWORD,
    grpc.FieldType.FieldTypeInteger: models.PayloadSchemaType.INTEGER,
    grpc.FieldType.FieldTypeFloat: models.PayloadSchemaType.FLOAT,
    grpc.FieldType.FieldTypeGeo: models.PayloadSchemaType.GEO,
    grpc.FieldType.FieldTypeText: models.PayloadSchemaType.TEXT,
    grpc.FieldType.FieldTypeBool: models.PayloadSchemaType.BOOL,
    grpc.FieldType.FieldTypeDatetime: models.PayloadSchemaType.DATETIME,
    grpc.FieldType.FieldTypeUuid: models.PayloadSchemaType.UUID,
}
SCROLL_PAGE = 1024  # ids per page when a filter names the points to update


def _filter(request: Any) -> models.Filter | None:
    return cv.filter_(request.filter) if request.HasField("filter") else None


class PointsService(PointsServicer):
    def __init__(self, store: EdgeServerStore) -> None:
        self.store = store
        self._operations = itertools.count(1)

    def _written(self, request: Any) -> grpc.PointsOperationResponse:
        self.store.maintain()
        wait = request.HasField("wait") and request.wait
        status = grpc.UpdateStatus.Completed if wait else grpc.UpdateStatus.Acknowledged
        result = grpc.UpdateResult(operation_id=next(self._operations), status=status)
        return grpc.PointsOperationResponse(result=result)

    # -- writes ------------------------------------------------------------------------------

    @rpc
    def Upsert(self, request: grpc.UpsertPoints) -> grpc.PointsOperationResponse:
        refuse(request, "shard_key_selector", "update_filter", "update_mode")
        self.store.upsert(request.collection_name, cv.points(request.points))
        return self._written(request)

    @rpc
    def Delete(self, request: grpc.DeletePoints) -> grpc.PointsOperationResponse:
        refuse(request, "shard_key_selector")
        self.store.delete(request.collection_name, cv.selector(request.points))
        return self._written(request)

    @rpc
    def SetPayload(self, request: grpc.SetPayloadPoints) -> grpc.PointsOperationResponse:
        refuse(request, "shard_key_selector", "key")
        if not request.HasField("points_selector"):
            raise invalid("Wrong input: no points_selector: the points to update")
        name = request.collection_name
        selector = cv.selector(request.points_selector)
        if isinstance(selector, models.PointIdsList):
            ids: list[Any] = list(selector.points)
        else:  # the points the filter matches now (not atomic with the update)
            ids = self._matching(name, selector.filter)
        payload: dict[str, Any] = G.convert_payload(request.payload)
        self.store.set_payload(name, ids, payload)
        return self._written(request)

    def _matching(self, name: str, flt: models.Filter) -> list[Any]:
        ids: list[Any] = []
        offset = None
        while True:
            found, offset = self.store.scroll(
                name, limit=SCROLL_PAGE, offset=offset, flt=flt, with_payload=False
            )
            ids += [r.id for r in found]
            if offset is None:
                return ids

    @rpc
    def CreateFieldIndex(
        self, request: grpc.CreateFieldIndexCollection
    ) -> grpc.PointsOperationResponse:
        refuse(request, "field_index_params")
        if not request.HasField("field_type"):
            raise invalid(f"Wrong input: field {request.field_name!r}: no field_type")
        kind = _FIELD_TYPES[request.field_type]
        self.store.create_field_index(request.collection_name, request.field_name, kind)
        return self._written(request)

    # -- reads -------------------------------------------------------------------------------

    @rpc
    def Get(self, request: grpc.GetPoints) -> grpc.GetResponse:
        refuse(request, "shard_key_selector")
        shape = cv.payload_shape(
            request.with_payload if request.HasField("with_payload") else None, True
        )
        found = self.store.retrieve(
            request.collection_name,
            [cv.point_id(i) for i in request.ids],  # type: ignore[misc]
            with_payload=shape.ask,
            with_vectors=cv.vectors_selection(
                request.with_vectors if request.HasField("with_vectors") else None
            ),
        )
        return grpc.GetResponse(result=[cv.record(r, shape) for r in found])

    @rpc
    def Scroll(self, request: grpc.ScrollPoints) -> grpc.ScrollResponse:
        refuse(request, "shard_key_selector", "order_by")
        shape = cv.payload_shape(
            request.with_payload if request.HasField("with_payload") else None, True
        )
        found, next_offset = self.store.scroll(
            request.collection_name,
            limit=request.limit if request.HasField("limit") else cv.DEFAULT_LIMIT,
            offset=cv.point_id(request.offset) if request.HasField("offset") else None,
            flt=_filter(request),
            with_payload=shape.ask,
            with_vectors=cv.vectors_selection(
                request.with_vectors if request.HasField("with_vectors") else None
            ),
        )
        return grpc.ScrollResponse(
            result=[cv.record(r, shape) for r in found],
            next_page_offset=cv.next_offset(next_offset),
        )

    @rpc
    def Count(self, request: grpc.CountPoints) -> grpc.CountResponse:
        refuse(request, "shard_key_selector")
        count = self.store.count(request.collection_name, _filter(request))  # always exact
        return grpc.CountResponse(result=grpc.CountResult(count=count))

    @rpc
    def Query(self, request: grpc.QueryPoints) -> grpc.QueryResponse:
        kw, shape = cv.query(request)
        offset = request.offset if request.HasField("offset") else 0
        kw["limit"] += offset  # Edge's QueryRequest has an offset; the store's request not
        found = self.store.query(kw)[offset:]
        return grpc.QueryResponse(result=[cv.scored(p, shape) for p in found])

    @rpc
    def QueryGroups(self, request: grpc.QueryPointGroups) -> grpc.QueryGroupsResponse:
        refuse(request, "with_lookup")
        if not request.group_by:
            raise invalid("Wrong input: group_by is empty")
        kw, shape = cv.query(request, need=request.group_by)
        kw["group_by"] = request.group_by
        size = request.group_size if request.HasField("group_size") else cv.DEFAULT_GROUP_SIZE
        kw["group_size"] = size
        groups = self.store.query_groups(kw)  # grouped by sinks/store/edge_groups.py
        result = grpc.GroupsResult(groups=[cv.group(g, shape) for g in groups])
        return grpc.QueryGroupsResponse(result=result)
