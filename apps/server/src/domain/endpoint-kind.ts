// What each kind of endpoint may subscribe to (the contract's EndpointKind): an audit endpoint only
// to audit.completed (the seed's rule), an operational endpoint only to the operational
// notifications, and only an audit endpoint shapes its payload or filters what it receives.
import type { EndpointKind, EventType } from "@audit-review/api-types/internal";
import { OPERATIONAL_EVENT_TYPES } from "../lib/stored-values.js";

const AUDIT_TYPES: readonly EventType[] = ["audit.completed"];

/** The subscription an endpoint of this kind gets when none is given. */
export const defaultEventTypes = (kind: EndpointKind): EventType[] => [...(kind === "audit" ? AUDIT_TYPES : OPERATIONAL_EVENT_TYPES)];

/** Why these event types cannot be an endpoint of this kind's subscription; null when they can. */
export function subscriptionProblem(kind: EndpointKind, eventTypes: readonly EventType[]): string | null {
  const allowed: readonly EventType[] = kind === "audit" ? AUDIT_TYPES : OPERATIONAL_EVENT_TYPES;
  const wrong = eventTypes.filter((t) => !allowed.includes(t));
  if (!wrong.length) return null;
  return `${wrong.join(", ")} cannot be received by ${kind === "audit" ? "an audit" : "an operational"} endpoint, which takes only ${allowed.join(", ")}`;
}

/** The create or update fields only an audit endpoint has: set on an operational one, they are refused. */
export const AUDIT_ONLY_FIELDS = ["filters", "payload"] as const;
