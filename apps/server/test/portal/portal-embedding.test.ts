// A server told where browsers reach it (ARS_PUBLIC_URL, behind a TLS-terminating proxy) and
// which pages may frame the portal (ARS_PORTAL_FRAME_ANCESTORS): links name the public origin,
// the cookie is Secure, the Origin check expects the public origin, and the CSP lists the pages.
import { describe, expect, it } from "vitest";
import { rawProblem, useApiServer } from "../harness/factories.js";
import { mintLink, openLink, portalCall } from "./support.js";

const PUBLIC = "https://ars.example-portal.dev";
const server = await useApiServer({ publicUrl: PUBLIC, portalFrameAncestors: "https://app.example-portal.dev 'self'" });

describe("a portal behind a proxy, embedded in a dashboard", () => {
  it("When a link is minted and opened, Then it names the public origin, the cookie is Secure, and only the allowed pages may frame the portal", async () => {
    const { orgId, token } = await server.newOrg(["webhooks:read", "webhooks:write", "events:read"]);
    const link = await mintLink(server, token);
    expect(link.url.startsWith(`${PUBLIC}/portal/${orgId}/start?link=pl_`)).toBe(true);
    const opened = await openLink(link.url.replace(PUBLIC, server.url));
    expect(opened.setCookie).toMatch(/; Secure$/);
    const csp = opened.response.headers.get("content-security-policy")!;
    expect(csp.endsWith("frame-ancestors https://app.example-portal.dev 'self'")).toBe(true);
    expect(opened.response.headers.get("x-frame-options")).toBeNull();

    const cookie = opened.cookie!;
    const body = { url: "https://hooks.acme-receiver.com/embedded" };
    // the server's own address is not where browsers are: only the public origin may write
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body }), { status: 403, code: "ORIGIN_NOT_ALLOWED" });
    expect((await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body, origin: PUBLIC })).status).toBe(201);
  });
});
