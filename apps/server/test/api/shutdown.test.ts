import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../harness/server.js";

describe("graceful shutdown", () => {
  it("when the server closes with a request in flight, then that request completes and new connections are refused", async () => {
    const server = await startTestServer();
    const org = await server.newOrg(["internal:ingest"]);
    const body = JSON.stringify({ set_name: "In flight", set_code: "INFLIGHT", questions: [{ query: "Still answered?" }] });
    const { port } = new URL(server.url);

    // The request is open (headers sent, half the body) when close() is called.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port, method: "POST", path: "/v2/internal/question_sets", headers: { authorization: `Bearer ${org.token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
        (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 10));
      req.on("socket", (socket) => socket.on("connect", () => setTimeout(() => {
        closing = server.close();
        setTimeout(() => req.end(body.slice(10)), 100);
      }, 50)));
    });
    let closing: Promise<void> | undefined;

    const done = await response;
    expect(done.status).toBe(201);
    expect(JSON.parse(done.body)).toMatchObject({ object: "question_set", set_code: "INFLIGHT" });
    await closing;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});
