// The endpoint form, for creating and for editing: URL, description, filters, payload fields,
// receiver authentication and signing. Each field shows the API's messages for it.
import type { AuditResultFilter, AuthenticationInput, CreateWebhookEndpointRequest, PayloadField, ResponsesFilter, ResultFormat, WebhookEndpoint, WebhookEndpointUpdateBody } from "@audit-review/client";
import { useState } from "preact/hooks";
import { usePortal } from "../context.js";
import type { Problem } from "../errors.js";
import { Field, ProblemNotice, useLoad } from "../ui.js";

const PAYLOAD_FIELDS: Array<{ value: PayloadField; label: string }> = [
  { value: "data.documentId", label: "Document id (data.documentId)" },
  { value: "data.result", label: "Result (data.result)" },
  { value: "responses", label: "Responses (responses)" },
  { value: "responses.query", label: "Question text (responses.query)" },
  { value: "responses.answer", label: "Answer (responses.answer)" },
  { value: "responses.context", label: "Context (responses.context)" },
];
type AuthType = AuthenticationInput["type"];

interface FormState {
  /** fixed once created: an operational endpoint has no filters or payload settings */
  kind: WebhookEndpoint["kind"];
  url: string;
  description: string;
  auditResults: AuditResultFilter;
  questionSetIds: string[];
  fields: PayloadField[];
  resultFormat: ResultFormat;
  responsesFilter: ResponsesFilter;
  informational: boolean;
  /** editing: whether the receiver authentication is replaced (its secrets are never shown) */
  changeAuth: boolean;
  authType: AuthType;
  headers: Array<{ name: string; value: string }>;
  username: string;
  password: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  audience: string;
  legacySignature: boolean;
}

/** The fields of the form, by the names the API's problems use. */
export const FORM_FIELDS = ["kind", "url", "description", "event_types", "filters", "payload", "authentication", "signing", "status"] as const;

function initialState(e?: WebhookEndpoint): FormState {
  return {
    kind: e?.kind ?? "audit",
    url: e?.url ?? "",
    description: e?.description ?? "",
    auditResults: e?.filters.audit_results ?? "all",
    questionSetIds: e?.filters.question_set_ids ?? [],
    fields: e?.payload.fields ?? PAYLOAD_FIELDS.map((f) => f.value),
    resultFormat: e?.payload.result_format ?? "normalized",
    responsesFilter: e?.payload.responses_filter ?? "all",
    informational: e?.payload.include_informational_questions ?? false,
    changeAuth: !e,
    authType: e?.authentication.type ?? "none",
    headers: [{ name: "", value: "" }],
    username: "",
    password: "",
    tokenUrl: "",
    clientId: "",
    clientSecret: "",
    scope: "",
    audience: "",
    legacySignature: e?.signing.legacy_signature ?? false,
  };
}

function authentication(s: FormState): AuthenticationInput {
  switch (s.authType) {
    case "headers":
      return { type: "headers", headers: Object.fromEntries(s.headers.filter((h) => h.name.trim()).map((h) => [h.name.trim(), h.value])) };
    case "basic":
      return { type: "basic", username: s.username, password: s.password };
    case "oauth2_client_credentials":
      return { type: "oauth2_client_credentials", token_url: s.tokenUrl, client_id: s.clientId, client_secret: s.clientSecret, ...(s.scope ? { scope: s.scope } : {}), ...(s.audience ? { audience: s.audience } : {}) };
    default:
      return { type: "none" };
  }
}

/** The request body; `kind` only when creating (it cannot change), filters and payload only for an audit endpoint. */
function body(s: FormState, creating: boolean): CreateWebhookEndpointRequest & WebhookEndpointUpdateBody {
  return {
    url: s.url.trim(),
    description: s.description.trim() || null,
    ...(creating ? { kind: s.kind } : {}),
    ...(s.kind === "audit"
      ? {
          filters: { audit_results: s.auditResults, question_set_ids: s.questionSetIds },
          payload: { fields: s.fields, result_format: s.resultFormat, responses_filter: s.responsesFilter, include_informational_questions: s.informational },
        }
      : {}),
    signing: { legacy_signature: s.legacySignature },
    ...(s.changeAuth ? { authentication: authentication(s) } : {}),
  };
}

/** What an endpoint's receiver authentication is now, without its secrets. */
function currentAuth(e: WebhookEndpoint): string {
  const a = e.authentication;
  if (a.type === "headers") return `Custom headers: ${a.header_names.join(", ")}`;
  if (a.type === "basic") return `Basic, user ${a.username}`;
  if (a.type === "oauth2_client_credentials") return `OAuth 2.0 client credentials, client ${a.client_id} at ${a.token_url}`;
  return "None";
}

export function EndpointForm(props: {
  endpoint?: WebhookEndpoint;
  submitLabel: string;
  problem: Problem | null;
  busy: boolean;
  onSubmit: (body: CreateWebhookEndpointRequest & WebhookEndpointUpdateBody) => void;
  onCancel?: () => void;
}) {
  const { client, canReadQuestionSets } = usePortal();
  const [s, setS] = useState<FormState>(() => initialState(props.endpoint));
  const set = (patch: Partial<FormState>) => setS((prev) => ({ ...prev, ...patch }));
  const sets = useLoad(() => (canReadQuestionSets ? client.listQuestionSets({ limit: 100 }) : Promise.resolve(null)), "question-sets");
  const problem = props.problem;
  const text = (e: Event) => (e.currentTarget instanceof HTMLInputElement || e.currentTarget instanceof HTMLTextAreaElement || e.currentTarget instanceof HTMLSelectElement ? e.currentTarget.value : "");
  const checked = (e: Event) => e.currentTarget instanceof HTMLInputElement && e.currentTarget.checked;
  const toggle = <T,>(list: T[], value: T, on: boolean) => (on ? [...list.filter((v) => v !== value), value] : list.filter((v) => v !== value));

  return (
    <form
      class="endpoint-form"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit(body(s, !props.endpoint));
      }}
      noValidate
    >
      <ProblemNotice problem={problem} fields={FORM_FIELDS} />
      <Field label="Endpoint URL" name="url" problem={problem} help="The HTTPS address that receives the events.">
        {(a) => <input {...a} type="url" name="url" required placeholder="https://hooks.example.com/audit-review" value={s.url} onInput={(e) => set({ url: text(e) })} />}
      </Field>
      <Field label="Description (optional)" name="description" problem={problem}>
        {(a) => <input {...a} type="text" name="description" maxLength={500} value={s.description} onInput={(e) => set({ description: text(e) })} />}
      </Field>
      {props.endpoint ? null : (
        <Field label="Receives" name="kind" problem={problem} help="Operational notifications: an endpoint failing, disabled or recovered, a delivery out of retries. Fixed once created.">
          {(a) => (
            <select {...a} name="kind" value={s.kind} onChange={(e) => set({ kind: text(e) === "operational" ? "operational" : "audit" })}>
              <option value="audit">Audit events (audit.completed)</option>
              <option value="operational">Operational notifications</option>
            </select>
          )}
        </Field>
      )}

      {s.kind === "audit" && (
      <fieldset>
        <legend>Filters</legend>
        <Field label="Audit results" name="filters.audit_results" problem={problem}>
          {(a) => (
            <select {...a} name="audit_results" value={s.auditResults} onChange={(e) => set({ auditResults: text(e) === "passed" ? "passed" : text(e) === "failed" ? "failed" : "all" })}>
              <option value="all">All audits</option>
              <option value="passed">Passed audits only</option>
              <option value="failed">Failed audits only</option>
            </select>
          )}
        </Field>
        {sets.data ? (
          <fieldset class="choices question-sets" aria-describedby="qs-help">
            <legend>Question sets</legend>
            <small id="qs-help">None selected: events of every question set.</small>
            {sets.data.data.map((q) => (
              <label key={q.id}>
                <input type="checkbox" name="question_set_ids" value={q.id} checked={s.questionSetIds.includes(q.id)} onChange={(e) => set({ questionSetIds: toggle(s.questionSetIds, q.id, checked(e)) })} />
                {q.set_name} <span class="muted">({q.set_code})</span>
              </label>
            ))}
            {problem && <FieldMessages problem={problem} name="filters.question_set_ids" />}
          </fieldset>
        ) : (
          <Field label="Question set ids (one per line; none: every question set)" name="filters.question_set_ids" problem={problem}>
            {(a) => (
              <textarea {...a} name="question_set_ids" rows={2} value={s.questionSetIds.join("\n")} onInput={(e) => set({ questionSetIds: text(e).split(/\s+/).filter(Boolean) })} />
            )}
          </Field>
        )}
      </fieldset>
      )}

      {s.kind === "audit" && (
      <fieldset>
        <legend>Payload</legend>
        <fieldset class="choices">
          <legend>Fields sent</legend>
          {PAYLOAD_FIELDS.map((f) => (
            <label key={f.value}>
              <input type="checkbox" name="payload_fields" value={f.value} checked={s.fields.includes(f.value)} onChange={(e) => set({ fields: toggle(s.fields, f.value, checked(e)) })} />
              {f.label}
            </label>
          ))}
          {problem && <FieldMessages problem={problem} name="payload.fields" />}
        </fieldset>
        <div class="grid">
          <Field label="Result format" name="payload.result_format" problem={problem}>
            {(a) => (
              <select {...a} name="result_format" value={s.resultFormat} onChange={(e) => set({ resultFormat: text(e) === "raw" ? "raw" : "normalized" })}>
                <option value="normalized">Normalized</option>
                <option value="raw">Raw</option>
              </select>
            )}
          </Field>
          <Field label="Responses" name="payload.responses_filter" problem={problem}>
            {(a) => (
              <select {...a} name="responses_filter" value={s.responsesFilter} onChange={(e) => set({ responsesFilter: text(e) === "failed" ? "failed" : "all" })}>
                <option value="all">All responses</option>
                <option value="failed">Failed responses only</option>
              </select>
            )}
          </Field>
        </div>
        <label>
          <input type="checkbox" role="switch" name="include_informational" checked={s.informational} onChange={(e) => set({ informational: checked(e) })} />
          Include informational questions
        </label>
      </fieldset>
      )}

      <fieldset>
        <legend>Receiver authentication</legend>
        {props.endpoint && (
          <>
            <p class="muted">Now: {currentAuth(props.endpoint)}. Credentials are never shown again.</p>
            <label>
              <input type="checkbox" name="change_auth" checked={s.changeAuth} onChange={(e) => set({ changeAuth: checked(e) })} />
              Replace the receiver authentication
            </label>
          </>
        )}
        {s.changeAuth && (
          <>
            <Field label="Type" name="authentication.type" problem={problem}>
              {(a) => (
                <select {...a} name="auth_type" value={s.authType} onChange={(e) => set({ authType: authTypeOf(text(e)) })}>
                  <option value="none">None</option>
                  <option value="headers">Custom headers</option>
                  <option value="basic">HTTP Basic</option>
                  <option value="oauth2_client_credentials">OAuth 2.0 client credentials</option>
                </select>
              )}
            </Field>
            {s.authType === "headers" && (
              <>
                {s.headers.map((h, i) => (
                  <div class="grid" key={i}>
                    <Field label={`Header ${i + 1} name`} name="authentication.headers" problem={i === 0 ? problem : null}>
                      {(a) => <input {...a} type="text" name={`header_name_${i}`} value={h.name} onInput={(e) => set({ headers: s.headers.map((x, j) => (j === i ? { ...x, name: text(e) } : x)) })} />}
                    </Field>
                    <Field label={`Header ${i + 1} value`} name="authentication.headers.value" problem={null}>
                      {(a) => <input {...a} type="password" autoComplete="off" name={`header_value_${i}`} value={h.value} onInput={(e) => set({ headers: s.headers.map((x, j) => (j === i ? { ...x, value: text(e) } : x)) })} />}
                    </Field>
                  </div>
                ))}
                {s.headers.length < 10 && (
                  <button type="button" class="secondary outline" onClick={() => set({ headers: [...s.headers, { name: "", value: "" }] })}>
                    Add a header
                  </button>
                )}
              </>
            )}
            {s.authType === "basic" && (
              <div class="grid">
                <Field label="Username" name="authentication.username" problem={problem}>
                  {(a) => <input {...a} type="text" name="username" autoComplete="off" value={s.username} onInput={(e) => set({ username: text(e) })} />}
                </Field>
                <Field label="Password" name="authentication.password" problem={problem}>
                  {(a) => <input {...a} type="password" name="password" autoComplete="new-password" value={s.password} onInput={(e) => set({ password: text(e) })} />}
                </Field>
              </div>
            )}
            {s.authType === "oauth2_client_credentials" && (
              <>
                <Field label="Token URL" name="authentication.token_url" problem={problem}>
                  {(a) => <input {...a} type="url" name="token_url" value={s.tokenUrl} onInput={(e) => set({ tokenUrl: text(e) })} />}
                </Field>
                <div class="grid">
                  <Field label="Client id" name="authentication.client_id" problem={problem}>
                    {(a) => <input {...a} type="text" name="client_id" autoComplete="off" value={s.clientId} onInput={(e) => set({ clientId: text(e) })} />}
                  </Field>
                  <Field label="Client secret" name="authentication.client_secret" problem={problem}>
                    {(a) => <input {...a} type="password" name="client_secret" autoComplete="new-password" value={s.clientSecret} onInput={(e) => set({ clientSecret: text(e) })} />}
                  </Field>
                </div>
                <div class="grid">
                  <Field label="Scope (optional)" name="authentication.scope" problem={problem}>
                    {(a) => <input {...a} type="text" name="scope" value={s.scope} onInput={(e) => set({ scope: text(e) })} />}
                  </Field>
                  <Field label="Audience (optional)" name="authentication.audience" problem={problem}>
                    {(a) => <input {...a} type="text" name="audience" value={s.audience} onInput={(e) => set({ audience: text(e) })} />}
                  </Field>
                </div>
              </>
            )}
          </>
        )}
      </fieldset>

      <fieldset>
        <legend>Signing</legend>
        <label>
          <input type="checkbox" role="switch" name="legacy_signature" checked={s.legacySignature} onChange={(e) => set({ legacySignature: checked(e) })} />
          Also send the legacy <code>x-signature-256</code> header
        </label>
      </fieldset>

      <div class="actions">
        <button type="submit" aria-busy={props.busy ? "true" : undefined} disabled={props.busy}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" class="secondary outline" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

const authTypeOf = (v: string): AuthType => (v === "headers" || v === "basic" || v === "oauth2_client_credentials" ? v : "none");

function FieldMessages({ problem, name }: { problem: Problem; name: string }) {
  const messages = problem.issues.filter((i) => i.location === "body" && (i.name === name || i.name.startsWith(`${name}.`))).map((i) => i.message);
  return messages.length ? (
    <small class="field-error" role="alert">
      {messages.join("; ")}
    </small>
  ) : null;
}
