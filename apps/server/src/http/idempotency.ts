// Idempotency-Key on public POSTs: the HTTP half. The service decides claim, replay or refusal;
// this middleware replays a kept response and captures the first one before it is sent.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger } from "../lib/logger.js";
import { connectionLossCause, isConnectionLoss, pauseBeforeRetry } from "../lib/connection-loss.js";
import type { Claim, IdempotencyService } from "../services/idempotency.service.js";
import { authOf } from "./context.js";

/** How often freeing a key is tried when the connection keeps being lost. */
const ABANDON_TRIES = 3;

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
          // Freeing the key is what lets the client's repeat run at all; the answer waits for it,
          // so the client never repeats before the key is free.
          void freeKey(claim).finally(() => send(body));
        },
      );
      return res;
    };
    next();
  }

  /**
   * Frees the key. After a lost connection the pool may still hand out connections that died with
   * it: two more tries, a pause apart, give it time to drop them.
   */
  async function freeKey(claim: Claim): Promise<void> {
    for (let tries = 1; ; tries++) {
      const failure = await claim.abandon().then(() => null, (err: unknown) => err);
      if (failure === null || !isConnectionLoss(failure)) return;
      if (tries === ABANDON_TRIES) {
        logger.warn({ cause: connectionLossCause(failure) }, "idempotency key left claimed: a repeat is refused until the claim is abandoned");
        return;
      }
      await pauseBeforeRetry();
    }
  }
}
