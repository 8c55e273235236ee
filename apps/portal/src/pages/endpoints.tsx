// Endpoints: the list, creation (the signing secret shown once, to copy), and one endpoint with
// its settings, test event, enable/disable, secret rotation, deletion, recovery and deliveries.
import type { CreatedWebhookEndpoint, WebhookEndpoint } from "@audit-review/client";
import { useLocation, useRoute } from "preact-iso";
import { useEffect, useRef, useState } from "preact/hooks";
import { usePortal } from "../context.js";
import { toProblem, type Problem } from "../errors.js";
import { idempotencyKey, localInputValue } from "../format.js";
import { Badge, Breadcrumb, Confirm, CopyButton, Empty, Field, Pager, ProblemNotice, Table, Time, cursorOf, queryString, useLoad } from "../ui.js";
import { DeliveryTable } from "./deliveries.js";
import { EndpointForm } from "./endpoint-form.js";

const key = idempotencyKey;

export function EndpointsPage() {
  const { client, base, canWrite } = usePortal();
  const { query, route } = useLocation();
  const list = useLoad(() => client.listWebhookEndpoints({ limit: 20, ...cursorOf(query) }), JSON.stringify(query));
  return (
    <>
      <div class="page-head">
        <h1>Endpoints</h1>
        {canWrite && (
          <a href={`${base}/endpoints/new`} role="button">
            Add endpoint
          </a>
        )}
      </div>
      <ProblemNotice problem={list.problem} />
      {list.loading && !list.data && <p aria-busy="true">Loading endpoints…</p>}
      {list.data && list.data.data.length === 0 && (
        <Empty title="No endpoints yet">
          <p>An endpoint is an HTTPS address of yours that receives a signed request each time an audit completes.</p>
          {canWrite && (
            <a href={`${base}/endpoints/new`} role="button">
              Add your first endpoint
            </a>
          )}
        </Empty>
      )}
      {list.data && list.data.data.length > 0 && (
        <Table columns={[{ label: "URL" }, { label: "Status" }, { label: "Filters", phone: false }, { label: "Created", phone: false }]}>
              {list.data.data.map((e) => (
                <tr key={e.id}>
                  <td class="url-cell">
                    <a href={`${base}/endpoints/${e.id}`}>{e.url}</a>
                    {e.description && <small class="muted block">{e.description}</small>}
                  </td>
                  <td>
                    <Badge status={e.status} />
                    {e.failing_since && <small class="block warn-text">failing</small>}
                  </td>
                  <td class="hide-sm">{filterSummary(e)}</td>
                  <td class="hide-sm">
                    <Time iso={e.created_at} />
                  </td>
                </tr>
              ))}
        </Table>
      )}
      {list.data && <Pager query={query} page={list.data} go={(q) => route(`${base}/endpoints${queryString(q)}`)} />}
    </>
  );
}

function filterSummary(e: WebhookEndpoint): string {
  const results = e.filters.audit_results === "all" ? "all audits" : `${e.filters.audit_results} audits`;
  const sets = e.filters.question_set_ids.length ? `${e.filters.question_set_ids.length} question set(s)` : "every question set";
  return `${results}, ${sets}`;
}

/** The signing secret, shown once: copy it now. */
function SecretPanel({ secret, title, onDone, doneLabel }: { secret: string; title: string; onDone: () => void; doneLabel: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <article class="secret-panel" aria-labelledby="secret-title">
      <h2 id="secret-title" tabIndex={-1} ref={heading}>
        {title}
      </h2>
      <p>
        Your receiver verifies each request with this signing secret. <strong>It is shown only now:</strong> copy it and keep it safe.
      </p>
      <div class="secret-row">
        <input type="text" readOnly value={secret} aria-label="Signing secret" class="secret" onFocus={(e) => e.currentTarget.select()} />
        <CopyButton value={secret} label="Copy secret" />
      </div>
      <button type="button" onClick={onDone}>
        {doneLabel}
      </button>
    </article>
  );
}

export function NewEndpointPage() {
  const { client, base, canWrite } = usePortal();
  const { route } = useLocation();
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedWebhookEndpoint | null>(null);
  if (!canWrite) return <Empty title="This session is read-only">It can show endpoints but not add them.</Empty>;
  if (created) {
    return (
      <>
        <h1>Endpoint added</h1>
        <p class="url-cell">{created.url}</p>
        <SecretPanel secret={created.secret} title="Signing secret" doneLabel="I have saved the secret" onDone={() => route(`${base}/endpoints/${created.id}`)} />
      </>
    );
  }
  return (
    <>
      <h1>Add an endpoint</h1>
      <EndpointForm
        submitLabel="Add endpoint"
        problem={problem}
        busy={busy}
        onCancel={() => route(`${base}/endpoints`)}
        onSubmit={async (body) => {
          setBusy(true);
          try {
            setCreated(await client.createWebhookEndpoint(body, { idempotencyKey: key() }));
          } catch (err) {
            setProblem(toProblem(err));
          } finally {
            setBusy(false);
          }
        }}
      />
    </>
  );
}

type Pending = "delete" | "rotate" | null;

export function EndpointPage() {
  const { client, base, canWrite } = usePortal();
  const { params } = useRoute();
  const { route } = useLocation();
  const id = params.id ?? "";
  const endpoint = useLoad(() => client.getWebhookEndpoint(id), id);
  const [editing, setEditing] = useState(false);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState<Pending>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [deliveriesTick, setDeliveriesTick] = useState(0);

  /** Runs a write; its problem or its outcome is said on the page. */
  async function act(run: () => Promise<string | null>) {
    setBusy(true);
    setProblem(null);
    setNotice(null);
    try {
      const said = await run();
      if (said) setNotice(said);
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  }

  if (endpoint.problem && !endpoint.data) {
    return (
      <>
        <ProblemNotice problem={endpoint.problem} />
        <a href={`${base}/endpoints`}>Back to the endpoints</a>
      </>
    );
  }
  const e = endpoint.data;
  if (!e) return <p aria-busy="true">Loading the endpoint…</p>;
  if (secret) {
    return <SecretPanel secret={secret} title="New signing secret" doneLabel="I have saved the secret" onDone={() => setSecret(null)} />;
  }
  return (
    <>
      <Breadcrumb list="Endpoints" href={`${base}/endpoints`} here="Endpoint" />
      <div class="page-head">
        <h1 class="url-cell">{e.url}</h1>
        <Badge status={e.status} />
      </div>
      {e.description && <p>{e.description}</p>}
      {e.status === "disabled" && (
        <p class="notice warn">
          Disabled ({e.disabled_reason ?? "manual"}) <Time iso={e.disabled_at} />: it gets no new deliveries.
        </p>
      )}
      {e.failing_since && (
        <p class="notice warn">
          Failing since <Time iso={e.failing_since} />: still failing after 5 days, it is disabled.
        </p>
      )}
      <div role="status" class="notice ok" hidden={!notice}>
        {notice}
      </div>
      <ProblemNotice problem={editing ? null : problem} />
      {canWrite && !editing && (
        <div class="actions wrap">
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy || e.status === "disabled"}
            onClick={() =>
              act(async () => {
                const d = await client.sendTestWebhookEvent(e.id, { idempotencyKey: key() });
                setDeliveriesTick((t) => t + 1);
                return `Test event queued (delivery ${d.id}).`;
              })
            }
          >
            Send test event
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={() =>
              act(async () => {
                await client.updateWebhookEndpoint(e.id, { status: e.status === "enabled" ? "disabled" : "enabled" });
                endpoint.reload();
                return e.status === "enabled" ? "Endpoint disabled." : "Endpoint enabled.";
              })
            }
          >
            {e.status === "enabled" ? "Disable" : "Enable"}
          </button>
          <button type="button" class="secondary" disabled={busy} onClick={() => setConfirm("rotate")}>
            Rotate secret
          </button>
          <button type="button" class="danger outline" disabled={busy} onClick={() => setConfirm("delete")}>
            Delete
          </button>
        </div>
      )}
      {editing ? (
        <section>
          <h2>Edit endpoint</h2>
          <EndpointForm
            endpoint={e}
            submitLabel="Save changes"
            problem={problem}
            busy={busy}
            onCancel={() => {
              setEditing(false);
              setProblem(null);
            }}
            onSubmit={(body) =>
              act(async () => {
                await client.updateWebhookEndpoint(e.id, body);
                setEditing(false);
                endpoint.reload();
                return "Changes saved.";
              })
            }
          />
        </section>
      ) : (
        <EndpointSummary e={e} />
      )}
      {canWrite && !editing && <Recover endpoint={e} />}
      <section>
        <div class="page-head">
          <h2>Recent deliveries</h2>
          <a href={`${base}/deliveries${queryString({ endpoint_id: e.id })}`}>All deliveries of this endpoint</a>
        </div>
        <DeliveryTable query={{ endpoint_id: e.id, limit: 10 }} refreshKey={deliveriesTick} showEndpoint={false} />
      </section>
      {canWrite && (
        <>
      <Confirm
        open={confirm === "delete"}
        title="Delete this endpoint?"
        confirmLabel="Delete endpoint"
        danger
        onCancel={() => setConfirm(null)}
        onConfirm={() => {
          setConfirm(null);
          void act(async () => {
            await client.deleteWebhookEndpoint(e.id);
            route(`${base}/endpoints`);
            return null;
          });
        }}
      >
        <p>
          <strong class="url-cell">{e.url}</strong> stops receiving events at once; its queued deliveries fail. Its past deliveries stay listed. This cannot be undone.
        </p>
      </Confirm>
      <Confirm
        open={confirm === "rotate"}
        title="Rotate the signing secret?"
        confirmLabel="Rotate secret"
        onCancel={() => setConfirm(null)}
        onConfirm={() => {
          setConfirm(null);
          void act(async () => {
            const rotated = await client.rotateWebhookEndpointSecret(e.id, { expires_in: 86400 }, { idempotencyKey: key() });
            setSecret(rotated.secret);
            endpoint.reload();
            return "Secret rotated: for 24 hours requests carry signatures with both the new and the previous secret.";
          });
        }}
      >
        <p>A new secret is issued and shown once. For 24 hours every request is signed with both the new and the previous secret, so your receiver can switch without losing a request.</p>
      </Confirm>
        </>
      )}
    </>
  );
}

function EndpointSummary({ e }: { e: WebhookEndpoint }) {
  return (
    <section>
      <h2>Settings</h2>
      <dl class="facts">
        <dt>Receives</dt>
        <dd>{e.kind === "operational" ? "operational notifications" : "audit events"}</dd>
        <dt>Events</dt>
        <dd>{e.event_types.join(", ")}</dd>
        {e.kind === "audit" && (
          <>
            <dt>Audit results</dt>
            <dd>{e.filters.audit_results}</dd>
            <dt>Question sets</dt>
            <dd>{e.filters.question_set_ids.length ? e.filters.question_set_ids.join(", ") : "every question set"}</dd>
            <dt>Payload fields</dt>
            <dd>{e.payload.fields.join(", ") || "none"}</dd>
            <dt>Result format</dt>
            <dd>{e.payload.result_format}</dd>
            <dt>Responses</dt>
            <dd>
              {e.payload.responses_filter}
              {e.payload.include_informational_questions ? ", informational questions included" : ""}
            </dd>
          </>
        )}
        <dt>Receiver authentication</dt>
        <dd>{e.authentication.type}</dd>
        <dt>Signing secret</dt>
        <dd>
          <code>{e.signing.secret_hint}</code>
          {e.signing.previous_secret_expires_at && (
            <>
              {" "}
              (previous secret signs until <Time iso={e.signing.previous_secret_expires_at} />)
            </>
          )}
          {e.signing.legacy_signature ? ", legacy x-signature-256 too" : ""}
        </dd>
        <dt>Endpoint id</dt>
        <dd>
          <code>{e.id}</code> <CopyButton value={e.id} label="Copy id" />
        </dd>
        <dt>Created</dt>
        <dd>
          <Time iso={e.created_at} />
        </dd>
      </dl>
    </section>
  );
}

/** The recovery window: failed deliveries created between two times are queued again. */
function Recover({ endpoint }: { endpoint: WebhookEndpoint }) {
  const { client } = usePortal();
  const now = new Date();
  const [since, setSince] = useState(localInputValue(new Date(now.getTime() - 24 * 3600_000)));
  const [until, setUntil] = useState("");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const value = (e: Event) => (e.currentTarget instanceof HTMLInputElement ? e.currentTarget.value : "");
  const iso = (local: string) => (local ? new Date(local).toISOString() : undefined);
  return (
    <details>
      <summary>Recover failed deliveries</summary>
      <form
        onSubmit={async (ev) => {
          ev.preventDefault();
          setProblem(null);
          setResult(null);
          try {
            const body = { since: iso(since) ?? "", ...(until ? { until: iso(until) } : {}) };
            const r = await client.recoverWebhookDeliveries(endpoint.id, body, { idempotencyKey: key() });
            setResult(r.queued === 1 ? "1 failed delivery queued again." : `${r.queued} failed deliveries queued again.`);
          } catch (err) {
            setProblem(toProblem(err));
          }
        }}
      >
        <p class="muted">Queues again every failed delivery of this endpoint created in the window (at most 14 days back).</p>
        <ProblemNotice problem={problem} fields={["since", "until"]} />
        <div class="grid">
          <Field label="From" name="since" problem={problem}>
            {(a) => <input {...a} type="datetime-local" name="since" required min={localInputValue(new Date(now.getTime() - 14 * 24 * 3600_000))} value={since} onInput={(e) => setSince(value(e))} />}
          </Field>
          <Field label="Until (optional: now)" name="until" problem={problem}>
            {(a) => <input {...a} type="datetime-local" name="until" value={until} onInput={(e) => setUntil(value(e))} />}
          </Field>
        </div>
        <button type="submit" class="secondary">
          Recover
        </button>
        <p role="status">{result}</p>
      </form>
    </details>
  );
}
