// Idempotency-Key on public POSTs: the HTTP half. The service decides claim, replay or refusal;
// this middleware replays a kept response and captures the first one before it is sent.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger } from "../lib/logger.js";
import type { IdempotencyService } from "../services/idempotency.service.js";
import { authOf } from "./context.js";

/** The response headers a replay repeats besides status and body. */
const REPLAYED_HEADERS = ["content-type", "location"];

export interface IdempotencyDeps {
  service: IdempotencyService;
  logger: Logger;
}

export function idempotency({ service, logger }: IdempotencyDeps): RequestHandler {
  // Only a public POST with a key does any work; every other request passes synchronously,
  // without the promise an async handler would cost it.
  return function idempotencyKey(req: Request, res: Response, next: NextFunction) {
    if (req.method !== "POST") return next();
    const key = req.get("idempotency-key");
    if (key === undefined || req.path.startsWith("/v2/internal/")) return next();
    return keyed(req, res, next, key);
  };

  async function keyed(req: Request, res: Response, next: NextFunction, key: string) {
    const begun = await service.begin(authOf(req).orgId, key, { method: req.method, path: req.path, body: req.body });
    if ("replay" in begun) {
      for (const [name, value] of Object.entries(begun.replay.headers)) res.setHeader(name, value);
      res.setHeader("Idempotent-Replayed", "true");
      res.status(begun.replay.status).send(begun.replay.body);
      return;
    }
    const { claim } = begun;

    // The response is stored before it is sent, so a repeat never sees the key still running
    // after the caller already has its answer.
    const send = res.send.bind(res);
    let captured = false;
    res.send = function storeThenSend(body?: unknown) {
      if (captured) return send(body);
      captured = true;
      const text = typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : JSON.stringify(body ?? "");
      const headers = Object.fromEntries(
        REPLAYED_HEADERS.flatMap((name) => {
          const value = res.getHeader(name);
          return value === undefined ? [] : [[name, String(value)]];
        }),
      );
      claim.finish({ status: res.statusCode, headers, body: text }).then(
        () => send(body),
        (error: unknown) => {
          logger.error({ err: error, request_id: req.requestId }, "idempotency key could not be stored");
          claim.abandon().catch(() => undefined);
          send(body);
        },
      );
      return res;
    };
    next();
  }
}
