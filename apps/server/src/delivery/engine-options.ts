// What every part of the engine that claims, sends and records deliveries is given: the
// dispatcher (HTTPS endpoints) and the listener hub (streams to `ars-listen`) alike.
import type { DeliveryConfig } from "../config.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../lib/logger.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { Clock } from "./clock.js";
import type { DeliveryObserver } from "./observer.js";
import type { QueueSignal } from "./queue-signal.js";
import type { Sender } from "./sender.js";

export interface EngineOptions {
  db: Database;
  logger: Logger;
  sender: Sender;
  secretBox: SecretBox;
  signal: QueueSignal;
  config: DeliveryConfig;
  clock?: Clock;
  random?: () => number;
  /** Told what the engine does (the metrics); nobody by default. */
  observe?: DeliveryObserver;
}
