import { describe, expectTypeOf, test } from "vitest";
import {
  parseAuditCompleted,
  verifyLegacySignature,
  verifyWebhook,
  type AuditCompletedPayload,
  type VerifiedWebhook,
} from "../../src/webhooks/index.js";

describe("webhook helpers", () => {
  test("verifyWebhook takes a secret or secrets, headers and the raw body", () => {
    const headers = new Headers();
    expectTypeOf(verifyWebhook({ secret: "whsec_x", headers, body: "{}" })).toEqualTypeOf<VerifiedWebhook>();
    verifyWebhook({ secrets: ["whsec_a", "whsec_b"], headers: { "webhook-id": "x" }, body: new Uint8Array(), toleranceSeconds: 60 });
    // @ts-expect-error a secret is required
    verifyWebhook({ headers, body: "{}" });
    // @ts-expect-error secret and secrets are exclusive
    verifyWebhook({ secret: "whsec_a", secrets: ["whsec_b"], headers, body: "{}" });
    // @ts-expect-error the body is the raw body, not a parsed object
    verifyWebhook({ secret: "whsec_x", headers, body: { type: "audit.completed" } });
    // @ts-expect-error toleranceSeconds is a number
    verifyWebhook({ secret: "whsec_x", headers, body: "{}", toleranceSeconds: "5m" });
    verifyLegacySignature({ secret: "whsec_x", headers, body: "{}" });
    // @ts-expect-error the legacy scheme has no timestamp, so no tolerance
    verifyLegacySignature({ secret: "whsec_x", headers, body: "{}", toleranceSeconds: 60 });
  });

  test("parseAuditCompleted returns the contract's payload type", () => {
    const event = parseAuditCompleted("{}");
    expectTypeOf(event).toEqualTypeOf<AuditCompletedPayload>();
    expectTypeOf(event.type).toEqualTypeOf<"audit.completed">();
    expectTypeOf(event.data.auditId).toBeString();
    expectTypeOf(event.data.documentId).toEqualTypeOf<string | null | undefined>();
    // @ts-expect-error the payload uses camelCase: auditId
    void event.data.audit_id;
  });
});
