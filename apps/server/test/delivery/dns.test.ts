// Name resolution end to end: the server's one resolver asks a real DNS server on 127.0.0.1,
// both when an endpoint is created (its URL check) and when the engine connects. A DNS server
// that stops answering makes a creation a 400 naming `url` (never a 500, never a hang) and an
// attempt a dns_error that is retried on the schedule.
import type { CreateWebhookEndpointRequest } from "@audit-review/api-types/internal";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createDnsResolver } from "../../src/net/resolver.js";
import { problemOf, rememberAuthentication } from "../harness/factories.js";
import { startDnsServer } from "../harness/dns-server.js";
import type { TestOrg } from "../harness/server.js";
import { RECEIVER_HOST, endpointFor, msBetween, onlyDelivery, publish, retryingAfterOne, useDeliveryServer } from "./support.js";

const DNS_TIMEOUT_MS = 300;
const RETRY_MS = 60_000;

const dns = await startDnsServer({ [RECEIVER_HOST]: ["127.0.0.1"] });
afterAll(() => dns.close());
const h = await useDeliveryServer(
  { scheduleMs: [0, RETRY_MS, RETRY_MS] },
  { resolver: createDnsResolver({ servers: [dns.address], timeoutMs: DNS_TIMEOUT_MS, hostsFile: null }) },
);

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
  dns.silent = false;
  dns.unanswered.clear();
});

describe("webhook endpoints and deliveries through DNS", () => {
  it("When DNS does not answer at creation, Then 400 INVALID_WEBHOOK_URL names url and says DNS timed out", async () => {
    dns.silent = true;
    const url = `https://${RECEIVER_HOST}/hook`;
    const started = performance.now();
    const problem = problemOf(await org.api.POST("/v2/webhook_endpoints", { body: { url } }), { status: 400, code: "INVALID_WEBHOOK_URL", name: "url", location: "body" });
    expect(performance.now() - started).toBeLessThan(DNS_TIMEOUT_MS + 2_000);
    expect(problem.errors).toEqual([
      { location: "body", name: "url", message: `URL host "${RECEIVER_HOST}" could not be checked: DNS did not answer within ${DNS_TIMEOUT_MS} ms; try again later` },
    ]);
  });

  it("When DNS does not answer for an OAuth2 token URL, Then the problem names authentication.token_url", async () => {
    const body: CreateWebhookEndpointRequest = {
      url: `https://${RECEIVER_HOST}/hook`,
      authentication: { type: "oauth2_client_credentials", token_url: `https://auth.acme-corp.com/token`, client_id: "id", client_secret: "s3cret-value" },
    };
    rememberAuthentication(body);
    // the receiver's name answers, the token URL's name never does
    dns.unanswered.add("auth.acme-corp.com");
    const problem = problemOf(await org.api.POST("/v2/webhook_endpoints", { body }), { status: 400, code: "INVALID_WEBHOOK_URL", name: "authentication.token_url", location: "body" });
    expect(problem.errors![0]!.message).toBe(`URL host "auth.acme-corp.com" could not be checked: DNS did not answer within ${DNS_TIMEOUT_MS} ms; try again later`);
  });

  it("When DNS stops answering before an attempt, Then the attempt is a dns_error, retried on the schedule, and delivered once DNS answers", async () => {
    const r = await h.receiver();
    dns.queries.length = 0;
    const ep = await endpointFor(org.api, r.url);
    expect(dns.queries).toContain(`A ${RECEIVER_HOST}`);

    dns.silent = true;
    await publish(org.api);
    await h.server.drain();
    const failed = await onlyDelivery(org.api, ep.id);
    expect(failed).toMatchObject(retryingAfterOne(null, { code: "dns_error", message: `could not resolve ${RECEIVER_HOST}: no answer from DNS within ${DNS_TIMEOUT_MS} ms` }));
    expect(msBetween(failed.updated_at, failed.next_attempt_at)).toBe(RETRY_MS);
    expect(r.requests).toHaveLength(0);

    dns.silent = false;
    h.clock.advance(RETRY_MS);
    await h.server.drain({ untilSettled: true });
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject({ status: "succeeded", attempt_count: 2, last_response_status: 200, last_error: null });
    expect(r.requests).toHaveLength(1);
  });
});
