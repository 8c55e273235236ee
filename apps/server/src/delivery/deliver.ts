// One claimed row, once it has a slot: its endpoint as it is now → prepare + attempt through its
// transport (attempt.ts) → decide (outcome.ts) → record (recorder.ts). The dispatcher decides
// when this runs; what one delivery goes through is here.
import { LRUCache } from "lru-cache";
import type { DeliveryConfig } from "../config.js";
import { newId, uuidv7Millis } from "../lib/ids.js";
import { listenerIdOf } from "../lib/listener-url.js";
import type { Logger } from "../lib/logger.js";
import { reportNotices } from "./notices.js";
import { ATTEMPT_TRIGGERS, stored } from "../lib/stored-values.js";
import { endpointUnavailable, unavailableCause } from "../domain/delivery/unavailable.js";
import type { DeliveriesQueueRepo, LeasedDelivery, OutcomeRecord, QueueEndpoint, QueueEvent, RecordResult } from "../repos/deliveries-queue.repo.js";
import type { Attempt } from "./attempt.js";
import type { Clock } from "../clock/clock.js";
import type { Keyring } from "./keyring.js";
import type { DeliveryObserver } from "./observer.js";
import { decideOutcome } from "./outcome.js";
import type { Recorder } from "./recorder.js";

export interface Job {
  d: LeasedDelivery;
  /** the lease the outcome is recorded under: read when recording, as the row may be claimed again by its own dispatcher meanwhile */
  leaseToken: string;
  ev: QueueEvent | undefined;
  /** the earliest endpoint read (by number) this row may be sent with: its claim's, or a later one */
  since: number;
}

/** What the dispatcher learns from a delivery as it goes. */
export interface DeliverHooks {
  /** The attempt is over (or was never made): the row's slot is free; its outcome is being recorded. */
  attemptOver(deliveryId: string, endpointId: string): void;
  /** The receiver could not be reached at all. */
  unreachable(endpointId: string, at: Date): void;
  /** A retry of this row is due at `at`. */
  retryAt(at: Date): void;
  /** Deliveries were queued (operational notifications): every dispatcher should look. */
  queued(): void;
}

export interface DeliverDeps {
  queue: Pick<DeliveriesQueueRepo, "endpoints">;
  attempt: Attempt;
  keyring: Keyring;
  recorder: Recorder<OutcomeRecord, RecordResult>;
  clock: Clock;
  random: () => number;
  config: DeliveryConfig;
  log: Logger;
  hooks: DeliverHooks;
  observe: DeliveryObserver;
}

export interface Deliverer {
  /** Forgets what is known of an endpoint (it was updated, deleted or rotated): rows sent from now on read it again. */
  forget(endpointId: string): void;
  /** Numbers a read of endpoint rows that starts now (a claim's). */
  startRead(): number;
  /** What a claim read (under `mark`) for the endpoints of its rows. */
  claimed(endpoints: ReadonlyMap<string, QueueEndpoint>, endpointIds: readonly string[], mark: number): void;
  /** The mark of the next read to start: a row started now with it reads its endpoint afresh. */
  nextRead(): number;
  deliver(job: Job): Promise<void>;
}

/** Errors that mean the receiver could not be reached at all (as opposed to answering badly or slowly). */
const UNREACHABLE = new Set(["connection_error", "dns_error", "tls_error", "destination_blocked"]);

/**
 * Endpoint rows kept at once. Only endpoints with rows held need one (the dispatcher holds at
 * most `concurrency + batchSize` rows), so this bound is never what a busy engine hits: it keeps
 * a process whose endpoints come and go (listeners) from growing.
 */
export const MAX_ENDPOINT_ROWS = 4_096;

export function createDeliverer({ queue, attempt, keyring, recorder, clock, random, config, log, hooks, observe }: DeliverDeps): Deliverer {
  const endpointRows = new LRUCache<string, { row: Promise<QueueEndpoint | undefined>; mark: number }>({ max: MAX_ENDPOINT_ROWS });
  let reads = 0; // numbers the endpoint reads, in the order they start
  // Re-reads are batched: rows whose slot frees while a re-read is on the wire join the next one,
  // which starts when that one is over. Each row still reads its endpoint after its slot freed,
  // but at most one re-read is in flight, for all the endpoints waiting on it.
  let nextBatch: { ids: Set<string>; rows: Promise<Map<string, QueueEndpoint>> } | null = null;
  let onWire: Promise<unknown> = Promise.resolve();

  function reread(id: string): Promise<QueueEndpoint | undefined> {
    if (!nextBatch) {
      const ids = new Set<string>();
      const batch = {
        ids,
        rows: onWire.then(() => {
          if (nextBatch === batch) nextBatch = null; // rows from now on join a later read
          const mark = ++reads;
          const rows = queue.endpoints([...ids]);
          for (const id of ids) {
            const row = rows.then((m) => m.get(id));
            endpointRows.set(id, { row, mark });
            // a failed read is not kept: the next row to start reads again
            row.catch(() => endpointRows.get(id)?.mark === mark && endpointRows.delete(id));
          }
          return rows;
        }),
      };
      nextBatch = batch;
      onWire = batch.rows.catch(() => undefined);
    }
    nextBatch.ids.add(id);
    return nextBatch.rows.then((m) => m.get(id));
  }

  /**
   * The endpoint row an attempt uses: read no earlier than `since`, the moment the row's slot
   * freed (dispatcher.ts), so a disable, delete or rotation committed while it waited is seen at
   * send time. Rows started straight from their claim use the claim's read; waiting rows share
   * the next re-read.
   */
  function currentEndpoint(id: string, since: number): Promise<QueueEndpoint | undefined> {
    const known = endpointRows.get(id);
    if (known && known.mark >= since) return known.row;
    return reread(id);
  }

  async function record(o: OutcomeRecord, d: LeasedDelivery, ordered = false): Promise<void> {
    const result = await recorder.record(o);
    const fields = { delivery_id: d.id, endpoint_id: d.endpoint_id, event_id: d.event_id, attempt: o.update.attempt_count, status: o.update.status };
    observe.outcome(result.recorded ? o.update.status : "lease_lost", o.update.last_error_code);
    // Lease ran out and another dispatcher took the row, or the endpoint became unusable meanwhile.
    if (!result.recorded) return log.warn(fields, "delivery outcome not recorded: the row changed hands while the attempt ran");
    if (result.disabled) {
      observe.endpointDisabled(result.disabled);
      log.warn({ endpoint_id: d.endpoint_id, reason: result.disabled }, "webhook endpoint disabled");
    }
    if (result.notices.length) {
      reportNotices(result.notices, observe, log);
      // their deliveries are due now: every dispatcher looks (this one included)
      hooks.queued();
    }
    if (o.update.status === "retrying" && o.update.next_attempt_at) hooks.retryAt(o.update.next_attempt_at);
    if (ordered && o.update.status === "retrying") {
      observe.orderedHeld();
      log.info({ ...fields, next_attempt_at: o.update.next_attempt_at }, "ordered endpoint held: its later deliveries wait for this retrying one");
    }
  }

  return {
    forget: (endpointId) => void endpointRows.delete(endpointId),
    startRead: () => ++reads,
    nextRead: () => reads + 1,
    claimed(endpoints, endpointIds, mark) {
      for (const id of endpointIds) {
        if ((endpointRows.get(id)?.mark ?? 0) < mark) endpointRows.set(id, { row: Promise.resolve(endpoints.get(id)), mark });
      }
    },

    async deliver(job) {
      const { d, ev, since } = job;
      const base = () => ({ deliveryId: d.id, createdAt: d.created_at, endpointId: d.endpoint_id, leaseToken: job.leaseToken });
      let report;
      let ep: QueueEndpoint | undefined;
      try {
        ep = await currentEndpoint(d.endpoint_id, since);
        // The endpoint is checked now, not at fan-out: it may have been disabled or deleted since.
        if (ep && !ep.deleted_at && ep.status === "enabled") {
          if (!ev) throw new Error(`event ${d.event_id} of delivery ${d.id} is missing`);
          report = await attempt(ep, ev, keyring.keysFor(ep));
          // before the slot is given back: the claim that slot starts must already skip it
          // (a listener's stream that ended gives its waiting rows back itself: transports/listener.ts)
          if (report.error && UNREACHABLE.has(report.error.code) && listenerIdOf(ep.url) === null) hooks.unreachable(ep.id, clock.now());
        }
      } finally {
        hooks.attemptOver(d.id, d.endpoint_id);
      }
      if (!ep || !report) {
        const update = endpointUnavailable(ep ? unavailableCause(ep) : "deleted", { attemptCount: d.attempt_count, lastStatus: d.last_response_status, isTest: d.is_test });
        return record({ ...base(), update, effect: null, attempt: null, at: clock.now() }, d);
      }
      const trigger = stored(ATTEMPT_TRIGGERS, d.next_trigger);
      observe.attempt(report.durationMs);
      // the delivery's id carries its creation time, the moment its event was stored
      if (d.attempt_count === 0 && trigger === "scheduled") observe.firstAttempt(report.startedAt.getTime() - uuidv7Millis(d.id));
      const at = clock.now();
      const outcome = decideOutcome({ attemptCount: d.attempt_count, isTest: d.is_test, result: report, now: at, random, config, oneShot: trigger === "manual" });
      log.info({ ...base(), event_id: d.event_id, attempt: outcome.delivery.attempt_count, response_status: report.status, error_code: report.error?.code ?? null, outcome: outcome.delivery.status, duration_ms: report.durationMs }, "delivery attempt");
      const attemptRow = { id: newId(), trigger, url: ep.url, started_at: report.startedAt, duration_ms: report.durationMs, response_body: report.responseBody };
      await record({ ...base(), update: outcome.delivery, effect: outcome.endpoint, attempt: attemptRow, at }, d, ep.delivery_order === "ordered");
    },
  };
}
