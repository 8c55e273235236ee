import { describe, expect, it } from "vitest";
import { loadOperations } from "../../src/http/operations.js";
import { SPEC_PATH } from "../../src/lib/paths.js";

const ops = loadOperations(SPEC_PATH);

describe("operation index", () => {
  it.each([
    ["GET", "/v2/coding_evaluations", "listCodingEvaluations"],
    ["GET", "/v2/coding_evaluations/", "listCodingEvaluations"],
    ["GET", "/v2/question_sets", "listQuestionSets"],
    ["POST", "/v2/webhook_endpoints", "createWebhookEndpoint"],
    ["GET", "/v2/webhook_endpoints/0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61", "getWebhookEndpoint"],
    ["POST", "/v2/webhook_endpoints/0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61/rotate_secret", "rotateWebhookEndpointSecret"],
  ])("when %s %s is matched, then it is %s", (method, path, operationId) => {
    expect(ops.match(method, path)?.operationId).toBe(operationId);
  });

  it.each([
    ["DELETE", "/v2/question_sets"],
    ["GET", "/v2/coding_evaluations//"],
    ["GET", "/v2/Coding_evaluations"],
    ["GET", "/v2/coding_evaluationsx"],
    ["GET", "/v2/webhook_endpoints/a/b"],
    ["HEAD", "/v2/question_sets"],
  ])("when %s %s is matched, then no operation", (method, path) => {
    expect(ops.match(method, path)).toBeUndefined();
  });

  it("when every operation's own path is matched, then that operation answers (the first in contract order)", () => {
    for (const op of ops.all) {
      const path = op.path.replace(/\{[^}]+\}/g, "x1");
      expect(ops.match(op.method, path)?.path).toBe(op.path);
    }
  });
});
