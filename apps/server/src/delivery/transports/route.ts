// Where an attempt goes, by the kind of its endpoint: an HTTPS endpoint through the sender (the
// only way out to the network), a webhook listener down the stream that holds it
// (listener.ts). This is the one place that tells them apart; everything before (claim, prepare,
// sign) and after (classify, record) is the same for both. A listener's URL is never handed to
// the sender, so no address is ever contacted because of a listener.
import { listenerIdOf } from "../../lib/listener-url.js";
import type { Sender } from "../sender.js";
import { listenerNotConnected, type ListenerTransport } from "./listener.js";

/** A sender whose `send` picks the transport per endpoint kind; token fetches and closing stay the HTTPS sender's. */
export function routedSender(https: Sender, listeners: Pick<ListenerTransport, "send"> | null): Sender {
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
