// Dates the schema's format check accepts but that cannot be stored as the instant or day they
// name (a leap second, year 0000, an offset without its colon, an instant past year 9999) are
// refused at validation, naming the field; before, they reached PostgreSQL and answered 500.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createEndpoint, ingestQuestionSet, rawProblem, useApiServer } from "../harness/factories.js";

const server = await useApiServer();
const json = { "content-type": "application/json" };
const UNSTORABLE_INSTANTS = ["2016-12-31T23:59:60.000Z", "2016-12-31T22:59:60-01:00", "2026-11-21T09:30:00+01", "0000-01-01T00:00:00Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-23:59"];

async function post(token: string, path: string, body: unknown, method = "POST") {
  return server.raw(path, { token, method, headers: json, body: JSON.stringify(body) });
}

describe("occurred_at of an event", () => {
  it.each(UNSTORABLE_INSTANTS)("when occurred_at is %s, then /v2/internal/events and /event_batches answer 400 naming it, and nothing is stored", async (at) => {
    const { token, api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const event = () => ({ id: randomUUID(), type: "audit.completed", occurred_at: at, data: { audit_id: randomUUID(), question_set_id: set.id, result: "passed" } });
    await rawProblem(await post(token, "/v2/internal/events", event()), { status: 400, code: "VALIDATION_ERROR", name: "occurred_at", location: "body" });
    const problem = await rawProblem(await post(token, "/v2/internal/event_batches", { events: [{ ...event(), occurred_at: "2026-11-21T09:30:00.000Z" }, event()] }), {
      status: 400,
      code: "VALIDATION_ERROR",
      name: "events.1.occurred_at",
      location: "body",
    });
    expect(problem.errors!.map((e) => e.name)).toEqual(["events.1.occurred_at"]);
    expect((await api.GET("/v2/webhook_deliveries")).data!.data).toEqual([]);
  });

  it.each(["2016-12-31T23:59:59.999Z", "2026-11-21t09:30:00z", "2026-11-21 09:30:00+01:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z"])("when occurred_at is %s, then the event is stored", async (at) => {
    const { token, api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const res = await post(token, "/v2/internal/events", { id: randomUUID(), type: "audit.completed", occurred_at: at, data: { audit_id: randomUUID(), question_set_id: set.id, result: "passed" } });
    expect(res.status, await res.clone().text()).toBe(201);
  });
});

describe("display_date of a coding evaluation", () => {
  it("when display_date is 0000-01-01, then POST and PUT answer 400 naming it; 0001-01-01 is stored", async () => {
    const { token, api } = await server.newOrg();
    const body = { audit_id: randomUUID(), status: "completed", processed: true, display_date: "0000-01-01" };
    await rawProblem(await post(token, "/v2/internal/coding_evaluations", body), { status: 400, code: "VALIDATION_ERROR", name: "display_date", location: "body" });
    await rawProblem(await post(token, `/v2/internal/coding_evaluations/${randomUUID()}`, body, "PUT"), { status: 400, code: "VALIDATION_ERROR", name: "display_date", location: "body" });
    expect((await api.GET("/v2/coding_evaluations")).data!.data).toEqual([]);
    const res = await post(token, "/v2/internal/coding_evaluations", { ...body, display_date: "0001-01-01" });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { display_date: string }).display_date).toBe("0001-01-01");
  });
});

describe("the recovery window", () => {
  it("when since is a leap second, then 400 names since (not a 500)", async () => {
    const { token, api } = await server.newOrg();
    const endpoint = await createEndpoint(api);
    await rawProblem(await post(token, `/v2/webhook_endpoints/${endpoint.id}/recover`, { since: "2016-12-31T23:59:60Z" }), { status: 400, code: "VALIDATION_ERROR", name: "since", location: "body" });
  });
});
