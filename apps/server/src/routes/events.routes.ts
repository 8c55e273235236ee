import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { instantBound, pageRequest, sendList } from "../http/pagination.js";
import { presentEvent } from "../presenters/event.presenter.js";
import type { EventFilters, EventsService } from "../services/events.service.js";

type ListQuery = NonNullable<operations["listEvents"]["parameters"]["query"]>;

function filtersOf(query: ListQuery): EventFilters {
  return {
    type: query.type,
    auditId: query.audit_id,
    createdAfter: instantBound(query.created_after, "created_after", "after"),
    createdBefore: instantBound(query.created_before, "created_before", "before"),
  };
}

export function eventsRoutes(svc: EventsService): Router {
  return Router({ caseSensitive: true })
    .get("/v2/events", async function listEvents(req: Validated<unknown, ListQuery>, res) {
      const page = await svc.listEvents(authOf(req), filtersOf(req.query), pageRequest(req.query));
      sendList(res, page, presentEvent);
    })
    .get("/v2/events/:event_id", async function getEvent(req, res) {
      res.json(presentEvent(await svc.getEvent(authOf(req), req.params.event_id!)));
    });
}
