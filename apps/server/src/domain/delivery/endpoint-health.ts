// The endpoint-health rule (docs/delivery.md#states), its one owner. The repository reads the
// stored failure streak under the endpoint's row lock, asks here what a batch of outcomes makes
// of it, and writes the answer; nothing else decides whether an endpoint is disabled by its deliveries.
import { nextFailingNotice } from "./notices.js";
import { afterEndpointDisabled, type DeliveryUpdate, type EndpointEffect } from "./outcome.js";

export type DisableReason = "gone" | "failing";

/** One outcome as the health rule sees it. */
export interface HealthInput {
  endpointId: string;
  /** null when no attempt was made: it says nothing about the endpoint */
  effect: EndpointEffect | null;
  /** when the outcome was decided */
  at: Date;
}

export interface Health {
  /** the failure streak's start after these outcomes; null when none is running */
  failingSince: Date | null;
  disabled: { reason: DisableReason; at: Date } | null;
}

/**
 * Folds one endpoint's outcomes, in the order they were decided, into its stored streak. A
 * success ends the streak, a failure starts one or continues it, and a failure while the streak
 * is older than `disableAfterMs` disables the endpoint as failing; a 410 disables it as gone.
 */
export function nextHealth(storedFailingSince: Date | null, outcomes: readonly Pick<HealthInput, "effect" | "at">[], disableAfterMs: number): Health {
  let failingSince = storedFailingSince;
  for (const o of [...outcomes].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    if (o.effect === "healthy") failingSince = null;
    else if (o.effect === "gone") return { failingSince, disabled: { reason: "gone", at: o.at } };
    else if (o.effect === "failing") {
      failingSince ??= o.at;
      if (o.at.getTime() - failingSince.getTime() > disableAfterMs) return { failingSince, disabled: { reason: "failing", at: o.at } };
    }
  }
  return { failingSince, disabled: null };
}

/** An endpoint's streak as it is to be stored, and the moment that changed. */
export interface StreakChange {
  endpointId: string;
  failingSince: Date | null;
  /** the outstanding `failing` notification (domain/delivery/notices.ts) */
  failingNoticeAt: Date | null;
  at: Date;
}

/** What is stored of an endpoint's health, read under its row lock. */
export interface StoredHealth {
  failingSince: Date | null;
  failingNoticeAt: Date | null;
}

export interface BatchHealth {
  /** the streak of every endpoint the batch says something about */
  streaks: StreakChange[];
  /** endpoints the batch disables, and why */
  disabled: Map<string, { reason: DisableReason; at: Date }>;
  /** each outcome's delivery update as it is to be stored, in the order given */
  updates: DeliveryUpdate[];
}

/** The outcomes that say something about an endpoint, grouped by endpoint. */
function byEndpoint<T extends HealthInput>(outcomes: readonly T[]): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const o of outcomes) {
    if (!o.effect) continue;
    const list = map.get(o.endpointId) ?? [];
    list.push(o);
    map.set(o.endpointId, list);
  }
  return map;
}

const latest = (outcomes: readonly HealthInput[]) => new Date(Math.max(...outcomes.map((o) => o.at.getTime())));

/**
 * A batch's effect on its endpoints. `stored` holds the streak of each enabled endpoint, read
 * under its row lock; an endpoint missing there (disabled or deleted meanwhile) is left alone.
 * Pass `stored` as null when every outcome is a success: successes end a streak (and clear an
 * outstanding notification) whatever it was, so nothing needs reading or locking.
 */
export function batchHealth(
  outcomes: readonly (HealthInput & { update: DeliveryUpdate })[],
  stored: ReadonlyMap<string, StoredHealth> | null,
  disableAfterMs: number,
): BatchHealth {
  const streaks: StreakChange[] = [];
  const disabled = new Map<string, { reason: DisableReason; at: Date }>();
  for (const [endpointId, list] of byEndpoint(outcomes)) {
    if (stored && !stored.has(endpointId)) continue;
    const before = stored?.get(endpointId);
    const health = nextHealth(before?.failingSince ?? null, list, disableAfterMs);
    streaks.push({
      endpointId,
      failingSince: health.failingSince,
      failingNoticeAt: nextFailingNotice(before?.failingNoticeAt ?? null, health.failingSince),
      at: health.disabled?.at ?? latest(list),
    });
    if (health.disabled) disabled.set(endpointId, health.disabled);
  }
  const updates = outcomes.map((o) => (disabled.has(o.endpointId) ? afterEndpointDisabled(o.update) : o.update));
  return { streaks, disabled, updates };
}
