import type { Prisma, PrismaClient, WebhookEndpoint } from "../generated/prisma/client.js";
import type { Requeue } from "../domain/delivery/requeue.js";
import type { UnavailableCause } from "../domain/delivery/unavailable.js";
import { failQueuedDeliveries, type StatementRunner } from "./delivery-sql.js";
import { notifyDisabled, type NoticeMade } from "./notification-sql.js";
import { listOrder, paginate, type PageRequest } from "./keyset.js";

export type EndpointRow = WebhookEndpoint;

/** The endpoints that count toward an org's limit: every live one, webhook listeners included (from their creation). */
export const COUNTS_TOWARD_LIMIT = { deleted_at: null } as const satisfies Prisma.WebhookEndpointWhereInput;

/** A Prisma transaction as the raw-SQL modules' statement runner. */
const runnerOf = (tx: Prisma.TransactionClient): StatementRunner => ({ query: (sql, params = []) => tx.$queryRawUnsafe(sql, ...params) });

/** The queue's one failQueuedDeliveries, run inside this Prisma transaction. */
function failQueued(tx: Prisma.TransactionClient, endpointId: string, cause: UnavailableCause, now: Date) {
  return failQueuedDeliveries(runnerOf(tx), endpointId, cause, now);
}

/** The SQL type of each column an endpoint's update may write: its parameter is cast to it. */
const UPDATABLE: Partial<Record<keyof Prisma.WebhookEndpointUpdateManyMutationInput, string>> = {
  url: "text",
  description: "text",
  status: "text",
  disabled_reason: "text",
  disabled_at: "timestamptz",
  event_types: "text[]",
  filter_question_set_ids: "uuid[]",
  filter_audit_results: "text",
  payload_format: "text",
  payload_fields: "text[]",
  payload_result_format: "text",
  payload_responses_filter: "text",
  payload_include_informational: "boolean",
  auth_type: "text",
  auth_config: "jsonb",
  auth_secret_enc: "bytea",
  legacy_signature: "boolean",
  failing_since: "timestamptz",
  rate_limit: "integer",
  delivery_order: "text",
  updated_at: "timestamptz",
};

const isUpdatable = (column: string): column is keyof typeof UPDATABLE => Object.hasOwn(UPDATABLE, column);

/**
 * `col = $n::type, …` of an update's plain values, parameters from `$first`. Prisma's update
 * operations (`{ set }`, `{ increment }`, …) are not SQL values: the service writes none, and one
 * would fail here rather than be stored as JSON.
 */
function setClause(data: Prisma.WebhookEndpointUpdateManyMutationInput, first: number): { sql: string; params: unknown[] } {
  const sets: string[] = [];
  const params: unknown[] = [];
  for (const [column, value] of Object.entries(data)) {
    if (value === undefined) continue;
    if (!isUpdatable(column)) throw new Error(`webhook_endpoints.${column} is not written by an update`);
    const type = UPDATABLE[column]!;
    if (type === "jsonb") params.push(JSON.stringify(value));
    else if (value === null || typeof value !== "object" || value instanceof Date || value instanceof Uint8Array || Array.isArray(value)) params.push(value);
    else throw new Error(`webhook_endpoints.${column}: an update writes plain values, not Prisma operations`);
    sets.push(`${column} = $${first + params.length - 1}::${type}`);
  }
  return { sql: sets.join(", "), params };
}

/**
 * One statement updating a live endpoint of the org ($1, $2) and answering its status before
 * the update (no row: not live, or not the org's).
 *
 * The status before is read under the row lock, in the MATERIALIZED CTE, and not from a plain
 * self-join (`UPDATE … FROM webhook_endpoints was`). Both see the row as of the statement's
 * snapshot; but when a concurrent transaction updated the row and committed while this one
 * waited for the lock, READ COMMITTED re-checks the UPDATE against the row's newest version while
 * a plain self-join keeps the old version of `was`: two concurrent disables would both read
 * `enabled`, and both fail the queue and notify. A locking read waits the same way and then
 * answers the newest version, so the second disable reads `disabled` and notifies nothing, as the
 * former SELECT … FOR NO KEY UPDATE before the UPDATE did (the lock is the one the UPDATE takes
 * anyway, and it is taken first, so the lock order stays endpoint, then deliveries). A
 * concurrent delete makes the locking read find no live row: no update, as before.
 */
const updateReturningStatus = (set: string) => `
WITH was AS MATERIALIZED (
  SELECT id, status FROM webhook_endpoints WHERE id = $1::uuid AND org_id = $2 AND deleted_at IS NULL FOR NO KEY UPDATE
)
UPDATE webhook_endpoints e SET ${set}
  FROM was
 WHERE e.id = was.id
RETURNING was.status`;

export function webhookEndpointsRepo(prisma: PrismaClient) {
  return {
    list(orgId: string, f: { status?: string | undefined; kind?: string | undefined }, page: PageRequest) {
      const where: Prisma.WebhookEndpointWhereInput = { org_id: orgId, deleted_at: null, ...(f.status && { status: f.status }), ...(f.kind && { kind: f.kind }) };
      return paginate<EndpointRow>(page, {
        cursor: (id) => prisma.webhookEndpoint.findFirst({ where: { id, org_id: orgId }, select: { id: true, created_at: true } }),
        rows: (keyset, order, take) =>
          prisma.webhookEndpoint.findMany({ where: keyset ? { AND: [where, keyset] } : where, orderBy: listOrder(order), take }),
        count: () => prisma.webhookEndpoint.count({ where }),
      });
    },

    findLive(orgId: string, id: string) {
      return prisma.webhookEndpoint.findFirst({ where: { id, org_id: orgId, deleted_at: null } });
    },

    /**
     * Inserts unless the org already has `limit` live endpoints. The org row lock serialises
     * concurrent creates of one org, so the count cannot go stale between check and insert.
     */
    createWithinLimit(data: Prisma.WebhookEndpointUncheckedCreateInput, limit: number): Promise<EndpointRow | null> {
      return prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM orgs WHERE id = ${data.org_id} FOR UPDATE`;
        const live = await tx.webhookEndpoint.count({ where: { org_id: data.org_id, ...COUNTS_TOWARD_LIMIT } });
        if (live >= limit) return null;
        return tx.webhookEndpoint.create({ data });
      });
    },

    /**
     * Applies a validated partial update in one transaction: either every field changes (and a
     * disable fails the queued deliveries and notifies the org's operational endpoints) or, when
     * the endpoint is not live, nothing does. Answers the row and the notifications made.
     */
    update(
      orgId: string,
      id: string,
      data: Prisma.WebhookEndpointUpdateManyMutationInput,
      status: "enabled" | "disabled" | undefined,
      now: Date,
    ): Promise<{ row: EndpointRow; notices: NoticeMade[] } | null> {
      const statusData: Prisma.WebhookEndpointUpdateManyMutationInput =
        status === "disabled"
          ? { status, disabled_reason: "manual", disabled_at: now }
          : status === "enabled"
            ? { status, disabled_reason: null, disabled_at: null, failing_since: null }
            : {};
      const set = setClause({ ...data, ...statusData, updated_at: now }, 3);
      return prisma.$transaction(async (tx) => {
        // the row first (lock order: endpoint, then deliveries), so only a change from enabled disables and notifies
        const [before] = await runnerOf(tx).query<{ status: string }>(updateReturningStatus(set.sql), [id, orgId, ...set.params]);
        if (!before) return null;
        const notices: NoticeMade[] = [];
        if (status === "disabled" && before.status === "enabled") {
          await failQueued(tx, id, "manual", now);
          notices.push(...(await notifyDisabled(runnerOf(tx), id, now)));
        }
        return { row: await tx.webhookEndpoint.findUniqueOrThrow({ where: { id } }), notices };
      });
    },

    softDelete(orgId: string, id: string, now: Date): Promise<boolean> {
      return prisma.$transaction(async (tx) => {
        const { count } = await tx.webhookEndpoint.updateMany({
          where: { id, org_id: orgId, deleted_at: null },
          data: { deleted_at: now, updated_at: now },
        });
        if (count) await failQueued(tx, id, "deleted", now);
        return count > 0;
      });
    },

    /** The current secret becomes the previous one (for `graceMs`; none when 0). Row-locked: two rotations queue. */
    rotateSecret(orgId: string, id: string, next: { secret_enc: Uint8Array<ArrayBuffer>; secret_hint: string }, graceMs: number, now: Date) {
      return prisma.$transaction(async (tx) => {
        const [locked] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM webhook_endpoints WHERE id = ${id}::uuid AND org_id = ${orgId} AND deleted_at IS NULL FOR UPDATE`;
        if (!locked) return null;
        const row = await tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
        return tx.webhookEndpoint.update({
          where: { id },
          data: {
            previous_secret_enc: graceMs > 0 ? row.secret_enc : null,
            previous_secret_expires_at: graceMs > 0 ? new Date(now.getTime() + graceMs) : null,
            secret_enc: next.secret_enc,
            secret_hint: next.secret_hint,
            updated_at: now,
          },
        });
      });
    },

    /** Queues the endpoint's deliveries created in [since, until) again as `recovery` says (domain/delivery/requeue.ts). */
    async requeueFailed(orgId: string, endpointId: string, since: Date, until: Date, recovery: Requeue): Promise<number> {
      const { count } = await prisma.webhookDelivery.updateMany({
        where: { org_id: orgId, endpoint_id: endpointId, status: { in: [...recovery.from] }, created_at: { gte: since, lt: until } },
        data: {
          status: recovery.status, next_attempt_at: recovery.next_attempt_at, next_trigger: recovery.next_trigger,
          locked_until: null, lease_owner: null, updated_at: recovery.at,
        },
      });
      return count;
    },
  };
}

export type WebhookEndpointsRepo = ReturnType<typeof webhookEndpointsRepo>;
