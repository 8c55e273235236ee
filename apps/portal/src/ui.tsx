// Small pieces every page uses: times, copy buttons, fields with their errors, badges, empty
// states, confirmations, pagers, and a hook that loads data and says what went wrong.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { messagesFor, toProblem, unplacedIssues, type Problem } from "./errors.js";
import { exactTime, relativeTime } from "./format.js";

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={exactTime(iso)}>
      {relativeTime(iso)}
    </time>
  );
}

/** Copies a value; says so for screen readers too. */
export function CopyButton({ value, label = "Copy" }: { value: string; label?: string }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("yes");
    } catch {
      setCopied("no");
    }
  };
  return (
    <>
      <button type="button" class="secondary outline copy" onClick={copy}>
        {copied === "yes" ? "Copied" : label}
      </button>
      <span class="visually-hidden" role="status">
        {copied === "yes" ? "Copied to the clipboard" : copied === "no" ? "Could not copy: select the text and copy it" : ""}
      </span>
    </>
  );
}

const STATUS_CLASS: Record<string, string> = {
  enabled: "ok",
  succeeded: "ok",
  disabled: "off",
  failed: "bad",
  retrying: "warn",
  pending: "info",
};

export function Badge({ status }: { status: string }) {
  return <span class={`badge ${STATUS_CLASS[status] ?? "info"}`}>{status}</span>;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <article class="empty">
      <h3>{title}</h3>
      {children}
    </article>
  );
}

/** A problem above a form or a page: its summary and any issue no field shows. */
export function ProblemNotice({ problem, fields = [] }: { problem: Problem | null; fields?: readonly string[] }) {
  if (!problem) return null;
  const rest = unplacedIssues(problem, fields);
  // every issue is said beside its field: above the form, only where to look
  const placed = fields.length > 0 && problem.issues.length > 0 && rest.length === 0;
  return (
    <div class="notice bad" role="alert">
      <p>{placed ? `Check the ${problem.issues.length === 1 ? "field" : "fields"} marked below.` : problem.summary}</p>
      {rest.length > 0 && (
        <ul>
          {rest.map((i) => (
            <li key={`${i.location}:${i.name}`}>
              <code>{i.name}</code> {i.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A labelled control with its help text and the API's messages for it, tied by aria-describedby. */
export function Field(props: {
  label: string;
  name: string;
  problem: Problem | null;
  help?: string;
  children: (attrs: { id: string; "aria-invalid"?: "true"; "aria-describedby"?: string }) => ComponentChildren;
}) {
  const id = useId();
  const messages = messagesFor(props.problem, props.name);
  const described = [props.help ? `${id}-help` : "", messages.length ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <label for={id}>
      {props.label}
      {props.children({ id, ...(messages.length ? { "aria-invalid": "true" as const } : {}), ...(described ? { "aria-describedby": described } : {}) })}
      {messages.length > 0 && (
        <small id={`${id}-error`} class="field-error">
          {messages.join("; ")}
        </small>
      )}
      {props.help && <small id={`${id}-help`}>{props.help}</small>}
    </label>
  );
}

/** A confirmation in a modal <dialog>: focus moves in, Escape cancels, focus goes back. */
export function Confirm(props: { open: boolean; title: string; children: ComponentChildren; confirmLabel: string; danger?: boolean; onConfirm: () => void; onCancel: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} onClose={props.onCancel} aria-labelledby="confirm-title">
      <article>
        <h2 id="confirm-title">{props.title}</h2>
        {props.children}
        <footer>
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="button" class={props.danger ? "danger" : ""} onClick={props.onConfirm}>
            {props.confirmLabel}
          </button>
        </footer>
      </article>
    </dialog>
  );
}

export interface Loaded<T> {
  data: T | null;
  problem: Problem | null;
  loading: boolean;
  reload: () => void;
}

/** Loads data when `key` changes (and on reload); keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; problem: Problem | null; loading: boolean }>({ data: null, problem: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, problem: null, loading: false }),
      (err: unknown) => live && setState((s) => ({ data: s.data, problem: toProblem(err), loading: false })),
    );
    return () => {
      live = false;
    };
    // `load` closes over exactly what `key` names
  }, [key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Where a list page is: the API's cursor, kept in the address (`?after=id` / `?before=id`). */
export function cursorOf(query: Record<string, string>): { starting_after?: string; ending_before?: string } {
  if (query.after) return { starting_after: query.after };
  if (query.before) return { ending_before: query.before };
  return {};
}

/**
 * Newer / older pages of a list, by the ids at its edges. `has_more` tells about the direction of
 * travel only: a page reached going older has newer pages, and the reverse.
 */
export function Pager(props: { query: Record<string, string>; page: { data: Array<{ id: string }>; has_more: boolean }; go: (query: Record<string, string>) => void }) {
  const { query, page } = props;
  const hasNewer = query.after ? true : query.before ? page.has_more : false;
  const hasOlder = query.before ? true : page.has_more;
  if ((!hasNewer && !hasOlder) || page.data.length === 0) return null;
  const { after: _a, before: _b, ...filters } = query;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary outline" disabled={!hasNewer} onClick={() => props.go({ ...filters, before: page.data[0]!.id })}>
        ← Newer
      </button>
      <button type="button" class="secondary outline" disabled={!hasOlder} onClick={() => props.go({ ...filters, after: page.data[page.data.length - 1]!.id })}>
        Older →
      </button>
    </nav>
  );
}

/** `?a=1&b=2` of the values that are set. */
export function queryString(query: Record<string, string | undefined>): string {
  const pairs = Object.entries(query).filter((e): e is [string, string] => !!e[1]);
  return pairs.length ? `?${new URLSearchParams(pairs).toString()}` : "";
}

/** A list's table: its column heads (some hidden on a phone) and its rows. */
export function Table({ columns, children }: { columns: Array<{ label: string; phone?: false }>; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table class="striped">
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col" class={c.phone === false ? "hide-sm" : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** Where a detail page sits: its list, then itself. */
export function Breadcrumb({ list, href, here }: { list: string; href: string; here: string }) {
  return (
    <nav aria-label="breadcrumb">
      <ul>
        <li>
          <a href={href}>{list}</a>
        </li>
        <li>{here}</li>
      </ul>
    </nav>
  );
}
