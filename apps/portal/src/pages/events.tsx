// Events: what was published to the org, newest first, and one event as it was published.
import { useLocation, useRoute } from "preact-iso";
import { usePortal } from "../context.js";
import { pretty, shortId } from "../format.js";
import { Breadcrumb, CopyButton, Empty, Pager, ProblemNotice, Table, Time, cursorOf, queryString, useLoad } from "../ui.js";

export function EventsPage() {
  const { client, base } = usePortal();
  const { query, route } = useLocation();
  const list = useLoad(() => client.listEvents({ limit: 20, ...cursorOf(query) }), JSON.stringify(query));
  return (
    <>
      <h1>Events</h1>
      <ProblemNotice problem={list.problem} />
      {list.loading && !list.data && <p aria-busy="true">Loading events…</p>}
      {list.data && list.data.data.length === 0 && (
        <Empty title="No events yet">
          <p>Every audit that completes is published here as an <code>audit.completed</code> event, whether or not an endpoint received it, and so is every operational notification (an endpoint failing, disabled or recovered, a delivery out of retries).</p>
        </Empty>
      )}
      {list.data && list.data.data.length > 0 && (
        <Table columns={[{ label: "Event" }, { label: "Result" }, { label: "About", phone: false }, { label: "Created" }]}>
              {list.data.data.map((e) => (
                <tr key={e.id}>
                  <td>
                    <a href={`${base}/events/${e.id}`}>
                      {e.type}
                      {e.is_test ? " (test)" : ""}
                    </a>
                    <small class="muted block">
                      <code>{shortId(e.id)}</code>
                    </small>
                  </td>
                  <td>{e.data ? e.data.result : (e.notification?.disabled_reason ?? "")}</td>
                  <td class="hide-sm">
                    {e.data ? <code>{shortId(e.data.audit_id)}</code> : e.notification && <>endpoint <code>{shortId(e.notification.endpoint_id)}</code></>}
                  </td>
                  <td>
                    <Time iso={e.created_at} />
                  </td>
                </tr>
              ))}
        </Table>
      )}
      {list.data && <Pager query={query} page={list.data} go={(q) => route(`${base}/events${queryString(q)}`)} />}
    </>
  );
}

export function EventPage() {
  const { client, base } = usePortal();
  const { params } = useRoute();
  const id = params.id ?? "";
  const event = useLoad(() => client.getEvent(id), id);
  if (event.problem && !event.data) return <ProblemNotice problem={event.problem} />;
  const e = event.data;
  if (!e) return <p aria-busy="true">Loading the event…</p>;
  return (
    <>
      <Breadcrumb list="Events" href={`${base}/events`} here="Event" />
      <h1>
        {e.type}
        {e.is_test ? " (test)" : ""}
      </h1>
      <dl class="facts">
        <dt>Event id (webhook-id)</dt>
        <dd>
          <code>{e.id}</code> <CopyButton value={e.id} label="Copy id" />
        </dd>
        {e.data && (
          <>
            <dt>Audit</dt>
            <dd>
              <code>{e.data.audit_id}</code>
            </dd>
            <dt>Result</dt>
            <dd>{e.data.result}</dd>
          </>
        )}
        {e.notification && (
          <>
            <dt>Endpoint</dt>
            <dd>
              <a href={`${base}/endpoints/${e.notification.endpoint_id}`}>
                <code>{e.notification.endpoint_id}</code>
              </a>
            </dd>
          </>
        )}
        <dt>Occurred</dt>
        <dd>
          <Time iso={e.occurred_at} />
        </dd>
        <dt>Received</dt>
        <dd>
          <Time iso={e.created_at} />
        </dd>
      </dl>
      <h2>As published</h2>
      <pre class="preview" tabIndex={0} aria-label="The event as published">
        {pretty(e)}
      </pre>
    </>
  );
}
