// The one log line and metric of an operational notification made (docs/delivery.md#operational-notifications),
// wherever it was made: by the engine recording an outcome, or by an API process disabling an endpoint.
import type { Logger } from "../lib/logger.js";
import type { NoticeMade } from "../repos/notification-sql.js";
import type { DeliveryObserver } from "./observer.js";

export function reportNotices(notices: readonly NoticeMade[], observe: Pick<DeliveryObserver, "notified">, log: Logger): void {
  for (const n of notices) {
    observe.notified(n.type);
    log.info({ type: n.type, endpoint_id: n.endpointId }, "operational notification made");
  }
}
