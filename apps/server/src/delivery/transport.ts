// Where an attempt goes, by the kind of its endpoint: an HTTPS endpoint through the sender (the
// only way out to the network), a webhook listener through the stream that holds it. This is
// the one place that tells them apart; everything before (claim, prepare, sign) and after
// (decide, record) is the same for both. A listener's URL is never handed to the sender, so no
// address is ever contacted because of a listener.
import { listenerIdOf } from "../lib/listener-url.js";
import type { SendRequest, Sender, WebhookSendOutcome } from "./sender.js";

/** Delivers to webhook listeners: through a stream this process holds, or not at all. */
export interface ListenerTransport {
  send(listenerId: string, req: SendRequest): Promise<WebhookSendOutcome>;
}

/** The outcome of an attempt for a listener no stream of this process holds: it cannot be reached. */
export function listenerNotConnected(): WebhookSendOutcome {
  return {
    ok: false,
    status: null,
    headers: {},
    durationMs: 0,
    error: { code: "connection_error", message: "the webhook listener is not connected" },
    responseBody: null,
  };
}

/** A sender whose `send` picks the transport per endpoint kind; token fetches and closing stay the sender's. */
export function routedSender(https: Sender, listeners: ListenerTransport | null): Sender {
  return {
    send(req) {
      const listenerId = listenerIdOf(req.url);
      if (listenerId === null) return https.send(req);
      return listeners ? listeners.send(listenerId, req) : Promise.resolve(listenerNotConnected());
    },
    request: (req) => https.request(req),
    close: () => https.close(),
  };
}
