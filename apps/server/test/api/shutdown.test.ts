import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../harness/server.js";

describe("graceful shutdown", () => {
  it("when the server closes with a request in flight, then that request completes and new connections are refused", async () => {
    const server = await startTestServer();
    const org = await server.newOrg(["internal:ingest"]);
    const body = JSON.stringify({ set_name: "In flight", set_code: "INFLIGHT", questions: [{ query: "Still answered?" }] });
    const { port } = new URL(server.url);

    // The request is open (headers taken by the server, the body still coming) when close() is
    // called. The server's 100 Continue says it has the headers: no timing guess needed.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/v2/internal/question_sets",
          headers: { authorization: `Bearer ${org.token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body), expect: "100-continue" },
        },
        (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on("error", reject);
      req.on("continue", () => {
        req.write(body.slice(0, 10));
        closing = server.close();
        req.end(body.slice(10));
      });
      req.flushHeaders();
    });
    let closing: Promise<void> | undefined;

    const done = await response;
    expect(done.status).toBe(201);
    expect(JSON.parse(done.body)).toMatchObject({ object: "question_set", set_code: "INFLIGHT" });
    await closing;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});
