// The client's own plumbing, observed through an injected fetch (openapi-fetch's helpers.ts
// style). Behaviour against the API itself is tested against the real server in api.test.ts.
import { describe, expect, it } from "vitest";
import { encodeQueryComponent, serializeQuery } from "../src/client.js";
import { ApiError, createClient } from "../src/index.js";

function observedFetch(answer: (req: Request) => Response | Promise<Response>) {
  const requests: Request[] = [];
  const fetch = async (req: Request) => {
    requests.push(req.clone());
    return answer(req);
  };
  return { fetch, requests };
}
const emptyList = () => Response.json({ object: "list", data: [], has_more: false });

describe("createClient", () => {
  it("when given a token, then every request carries it as a bearer token", async () => {
    const { fetch, requests } = observedFetch(emptyList);
    const client = createClient({ baseUrl: "https://api.example-ars.dev/", token: "tok_1", fetch });
    await client.listQuestionSets();
    await client.listWebhookEndpoints({ status: "enabled" });
    expect(requests.map((r) => r.headers.get("authorization"))).toEqual(["Bearer tok_1", "Bearer tok_1"]);
    expect(requests.map((r) => r.url)).toEqual([
      "https://api.example-ars.dev/v2/question_sets",
      "https://api.example-ars.dev/v2/webhook_endpoints?status=enabled",
    ]);
  });

  it("when given getToken, then it is asked before every request, so a refreshed token is used", async () => {
    const { fetch, requests } = observedFetch(emptyList);
    let n = 0;
    const client = createClient({ baseUrl: "https://api.example-ars.dev", getToken: async () => `tok_${++n}`, fetch });
    await client.listCodingEvaluations();
    await client.listCodingEvaluations();
    expect(requests.map((r) => r.headers.get("authorization"))).toEqual(["Bearer tok_1", "Bearer tok_2"]);
  });

  it("when getToken yields an empty token, then the call fails before anything is sent", async () => {
    const { fetch, requests } = observedFetch(emptyList);
    const client = createClient({ baseUrl: "https://api.example-ars.dev", getToken: () => "", fetch });
    await expect(client.listQuestionSets()).rejects.toThrow(/non-empty string/);
    expect(requests).toHaveLength(0);
  });

  it("when the session cookie authenticates (the webhook portal's page), then no Authorization header is sent and no token is needed", async () => {
    const { fetch, requests } = observedFetch(emptyList);
    const client = createClient({ baseUrl: "https://api.example-ars.dev/portal/org_1/api", sessionCookie: true, fetch });
    await client.listWebhookEndpoints();
    expect(requests[0]!.headers.get("authorization")).toBeNull();
    expect(requests[0]!.url).toBe("https://api.example-ars.dev/portal/org_1/api/v2/webhook_endpoints");
  });

  it("when neither token nor baseUrl is usable, then createClient throws", () => {
    expect(() => createClient({ baseUrl: "https://x", token: "" })).toThrow(TypeError);
    expect(() => createClient({ baseUrl: "", token: "t" })).toThrow(/baseUrl/);
  });

  it("when a batch-get passes several ids and per-call headers, then they are sent as id=a&id=b and headers", async () => {
    const { fetch, requests } = observedFetch(emptyList);
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch, headers: { "x-client": "a" } });
    await client.listQuestionSets({ id: ["a", "b"], is_production: "true" }, { headers: { "X-Request-Id": "my-req-1" } });
    expect(new URL(requests[0]!.url).search).toBe("?id=a&id=b&is_production=true");
    expect(requests[0]!.headers.get("x-request-id")).toBe("my-req-1");
    expect(requests[0]!.headers.get("x-client")).toBe("a");
  });
});

describe("ApiError", () => {
  it("when the answer is not a problem (a proxy's HTML 502), then ApiError has the status, a null code and the header request id", async () => {
    const { fetch } = observedFetch(
      () => new Response("<html>Bad gateway</html>", { status: 502, headers: { "content-type": "text/html", "x-request-id": "edge-1" } }),
    );
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch });
    const err = await client.listQuestionSets().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 502, code: null, problem: null, requestId: "edge-1", errors: [] });
  });

  it("when a 429 carries Retry-After, then retryAfterSeconds holds it", async () => {
    const problem = {
      type: "/problems/rate-limited",
      title: "Rate limited",
      status: 429,
      detail: "Too many requests; retry after 3 seconds.",
      code: "RATE_LIMITED",
      request_id: "req_1",
    };
    const { fetch } = observedFetch(
      () => new Response(JSON.stringify(problem), { status: 429, headers: { "content-type": "application/problem+json", "retry-after": "3" } }),
    );
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch });
    const err = (await client.listWebhookDeliveries().catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 429, code: "RATE_LIMITED", requestId: "req_1", retryAfterSeconds: 3 });
    expect(err.message).toBe("429 RATE_LIMITED: Too many requests; retry after 3 seconds.");
  });
});

describe("pagination plumbing", () => {
  it("when a page says has_more but is empty, then the walk stops instead of looping", async () => {
    const { fetch, requests } = observedFetch(() => Response.json({ object: "list", data: [], has_more: true }));
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch });
    const items = [];
    for await (const item of client.paginate("/v2/webhook_endpoints")) items.push(item);
    expect(items).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it("when paginateBackward is called without ending_before, then it throws at once", () => {
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch: async () => emptyList() });
    // @ts-expect-error ending_before is required by the types too
    expect(() => client.paginateBackward("/v2/question_sets", { query: {} })).toThrow(/ending_before/);
  });
});

describe("query serialization", () => {
  it("when a value holds !'()*, then they are percent-encoded like every other reserved character", async () => {
    expect(encodeQueryComponent("a(b)!'*+ :/")).toBe("a%28b%29%21%27%2A%2B%20%3A%2F");
    const { fetch, requests } = observedFetch(emptyList);
    const client = createClient({ baseUrl: "https://api.example-ars.dev", token: "t", fetch });
    await client.listWebhookDeliveries({ event_type: "a(b)*" });
    expect(requests[0]!.url).toBe("https://api.example-ars.dev/v2/webhook_deliveries?event_type=a%28b%29%2A");
  });

  it("when a parameter is an array, then its name repeats, and absent values are left out", () => {
    expect(serializeQuery({ id: ["a", "b"], limit: 2, status: undefined })).toBe("id=a&id=b&limit=2");
  });
});
