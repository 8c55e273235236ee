// Deliveries: the list with its status and endpoint filters, and one delivery with its attempts
// (the request sent and the answer received), its retry, and its event.
import type { ListWebhookDeliveriesQuery, WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryStatus } from "@audit-review/client";
import { useLocation, useRoute } from "preact-iso";
import { useEffect, useState } from "preact/hooks";
import { usePortal } from "../context.js";
import { toProblem, type Problem } from "../errors.js";
import { idempotencyKey, pretty, shortId } from "../format.js";
import { Badge, Breadcrumb, CopyButton, Empty, Pager, ProblemNotice, Table, Time, cursorOf, queryString, useLoad } from "../ui.js";

const STATUSES: WebhookDeliveryStatus[] = ["pending", "retrying", "succeeded", "failed"];
const statusOf = (v: string | undefined): WebhookDeliveryStatus | undefined => STATUSES.find((s) => s === v);

/** A table of deliveries for a query; `refreshKey` reloads it (after a test event, say). */
export function DeliveryTable({ query, refreshKey = 0, showEndpoint = true, pager }: { query: ListWebhookDeliveriesQuery; refreshKey?: number; showEndpoint?: boolean; pager?: (page: { data: WebhookDelivery[]; has_more: boolean }) => preact.ComponentChildren }) {
  const { client, base } = usePortal();
  const [tick, setTick] = useState(0);
  const list = useLoad(() => client.listWebhookDeliveries(query), `${JSON.stringify(query)}#${refreshKey}#${tick}`);
  // Deliveries on their way are watched: the table shows their outcome once it is recorded.
  const watching = list.data?.data.some(dueSoon) ?? false;
  useEffect(() => {
    if (!watching || list.loading) return;
    const t = setTimeout(() => setTick((n) => n + 1), 1500);
    return () => clearTimeout(t);
  }, [watching, list.loading, tick]);
  if (list.problem && !list.data) return <ProblemNotice problem={list.problem} />;
  if (!list.data) return <p aria-busy="true">Loading deliveries…</p>;
  if (list.data.data.length === 0) {
    return (
      <Empty title="No deliveries">
        <p>Deliveries appear here when an event is sent to an endpoint. Send a test event from an endpoint's page to see one.</p>
      </Empty>
    );
  }
  return (
    <>
      <Table columns={[{ label: "Delivery" }, { label: "Status" }, ...(showEndpoint ? [{ label: "Endpoint", phone: false as const }] : []), { label: "Attempts", phone: false }, { label: "Created" }]}>
            {list.data.data.map((d) => (
              <tr key={d.id}>
                <td>
                  <a href={`${base}/deliveries/${d.id}`}>
                    {d.event_type}
                    {d.is_test ? " (test)" : ""}
                  </a>
                  <small class="muted block">
                    <code>{shortId(d.id)}</code>
                  </small>
                </td>
                <td>
                  <Badge status={d.status} />
                  {d.last_error && <small class="block muted">{d.last_error.code}</small>}
                </td>
                {showEndpoint && (
                  <td class="hide-sm">
                    <a href={`${base}/endpoints/${d.endpoint_id}`}>
                      <code>{shortId(d.endpoint_id)}</code>
                    </a>
                  </td>
                )}
                <td class="hide-sm">{d.attempt_count}</td>
                <td>
                  <Time iso={d.created_at} />
                </td>
              </tr>
            ))}
      </Table>
      {pager?.(list.data)}
    </>
  );
}

export function DeliveriesPage() {
  const { client, base } = usePortal();
  const { query, route } = useLocation();
  const endpoints = useLoad(() => client.listWebhookEndpoints({ limit: 100 }), "endpoints");
  const [tick, setTick] = useState(0);
  const go = (q: Record<string, string | undefined>) => route(`${base}/deliveries${queryString(q)}`);
  const status = statusOf(query.status);
  const value = (e: Event) => (e.currentTarget instanceof HTMLSelectElement ? e.currentTarget.value : "");
  return (
    <>
      <div class="page-head">
        <h1>Deliveries</h1>
        <button type="button" class="secondary outline" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </div>
      <form class="filters grid" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={status ?? ""} onChange={(e) => go({ status: value(e), endpoint_id: query.endpoint_id })}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Endpoint
          <select name="endpoint_id" value={query.endpoint_id ?? ""} onChange={(e) => go({ status: query.status, endpoint_id: value(e) })}>
            <option value="">Any endpoint</option>
            {(endpoints.data?.data ?? []).map((e) => (
              <option key={e.id} value={e.id}>
                {e.url}
              </option>
            ))}
          </select>
        </label>
      </form>
      <DeliveryTable
        query={{ limit: 20, ...(status ? { status } : {}), ...(query.endpoint_id ? { endpoint_id: query.endpoint_id } : {}), ...cursorOf(query) }}
        refreshKey={tick}
        pager={(page) => <Pager query={query} page={page} go={go} />}
      />
    </>
  );
}

const inFlight = (d: WebhookDelivery | null) => d?.status === "pending" || d?.status === "retrying";
/** On its way now: an attempt is due within the minute. */
function dueSoon(d: WebhookDelivery | null): boolean {
  return !!d && inFlight(d) && new Date(d.next_attempt_at).getTime() - Date.now() < 60_000;
}

export function DeliveryPage() {
  const { client, base, canWrite, canReadEvents } = usePortal();
  const { params } = useRoute();
  const id = params.id ?? "";
  const [tick, setTick] = useState(0);
  const delivery = useLoad(() => client.getWebhookDelivery(id), `${id}#${tick}`);
  const attempts = useLoad(() => client.listWebhookDeliveryAttempts(id, { limit: 20 }), `${id}#${tick}`);
  const event = useLoad(() => (canReadEvents && delivery.data ? client.getEvent(delivery.data.event_id) : Promise.resolve(null)), `${delivery.data?.event_id ?? ""}`);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const d = delivery.data;
  // While an attempt is on its way, watch it: the page shows the outcome when it is recorded.
  const watching = dueSoon(d);
  useEffect(() => {
    if (!watching || delivery.loading) return;
    const t = setTimeout(() => setTick((n) => n + 1), 1000);
    return () => clearTimeout(t);
  }, [watching, delivery.loading, tick]);

  if (delivery.problem && !d) return <ProblemNotice problem={delivery.problem} />;
  if (!d) return <p aria-busy="true">Loading the delivery…</p>;
  const retryable = canWrite && (d.status === "failed" || d.status === "succeeded");
  return (
    <>
      <Breadcrumb list="Deliveries" href={`${base}/deliveries`} here="Delivery" />
      <div class="page-head">
        <h1>
          {d.event_type}
          {d.is_test ? " (test)" : ""}
        </h1>
        <Badge status={d.status} />
      </div>
      <ProblemNotice problem={problem} />
      {retryable && (
        <button
          type="button"
          disabled={busy}
          aria-busy={busy ? "true" : undefined}
          onClick={async () => {
            setBusy(true);
            setProblem(null);
            try {
              await client.retryWebhookDelivery(d.id, { idempotencyKey: idempotencyKey() });
              setTick((n) => n + 1);
            } catch (err) {
              setProblem(toProblem(err));
            } finally {
              setBusy(false);
            }
          }}
        >
          {d.status === "succeeded" ? "Send again" : "Retry now"}
        </button>
      )}
      {watching && <p aria-busy="true">Waiting for the attempt's outcome…</p>}
      <dl class="facts">
        <dt>Delivery id</dt>
        <dd>
          <code>{d.id}</code> <CopyButton value={d.id} label="Copy id" />
        </dd>
        <dt>Endpoint</dt>
        <dd>
          <a href={`${base}/endpoints/${d.endpoint_id}`}>
            <code>{d.endpoint_id}</code>
          </a>
        </dd>
        <dt>Event (webhook-id)</dt>
        <dd>{canReadEvents ? <a href={`${base}/events/${d.event_id}`}><code>{d.event_id}</code></a> : <code>{d.event_id}</code>}</dd>
        <dt>Attempts</dt>
        <dd>{d.attempt_count}</dd>
        <dt>{inFlight(d) ? "Next attempt" : "Last attempt due"}</dt>
        <dd>
          <Time iso={d.next_attempt_at} />
        </dd>
        <dt>Delivered</dt>
        <dd>
          <Time iso={d.delivered_at} />
        </dd>
        <dt>Last error</dt>
        <dd>{d.last_error ? `${d.last_error.code}: ${d.last_error.message}` : "—"}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={d.created_at} />
        </dd>
      </dl>
      <h2>Attempts</h2>
      {attempts.problem && <ProblemNotice problem={attempts.problem} />}
      {attempts.data && attempts.data.data.length === 0 && <p class="muted">No attempt yet.</p>}
      {attempts.data?.data.map((a) => <Attempt key={a.id} a={a} delivery={d} eventBody={event.data ? pretty(event.data) : null} />)}
    </>
  );
}

function Attempt({ a, delivery, eventBody }: { a: WebhookDeliveryAttempt; delivery: WebhookDelivery; eventBody: string | null }) {
  const ok = a.response_status !== null && a.response_status >= 200 && a.response_status < 300;
  return (
    <article class="attempt">
      <header>
        <strong>Attempt {a.attempt_number}</strong> <span class={`badge ${ok ? "ok" : "bad"}`}>{a.response_status ?? a.error?.code ?? "no answer"}</span>{" "}
        <small class="muted">
          {a.trigger}, <Time iso={a.started_at} />, {a.duration_ms} ms
        </small>
      </header>
      <div class="grid previews">
        <section>
          <h3>Request</h3>
          <pre class="preview" tabIndex={0} aria-label={`Request of attempt ${a.attempt_number}`}>
            {`POST ${a.url}\ncontent-type: application/json\nwebhook-id: ${delivery.event_id}\nwebhook-timestamp: …\nwebhook-signature: v1,…\n\n`}
            {eventBody ?? "(the event's body)"}
          </pre>
          <small class="muted">The body is the event, reduced to the endpoint's payload fields.</small>
        </section>
        <section>
          <h3>Response</h3>
          <pre class="preview" tabIndex={0} aria-label={`Response of attempt ${a.attempt_number}`}>
            {a.response_status !== null ? `HTTP ${a.response_status}\n\n${a.response_body ?? ""}` : `No answer: ${a.error?.code ?? ""} ${a.error?.message ?? ""}`}
          </pre>
          {a.response_body !== null && <small class="muted">The first 1 KiB of the answer; credentials it echoed are redacted.</small>}
        </section>
      </div>
    </article>
  );
}
