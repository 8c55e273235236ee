import { LocationProvider, Route, Router, useLocation } from "preact-iso";
import { useEffect, useState } from "preact/hooks";
import { PortalContext, usePortal, type Portal } from "./context.js";
import { relativeTime, exactTime } from "./format.js";
import { DeliveriesPage, DeliveryPage } from "./pages/deliveries.js";
import { EndpointPage, EndpointsPage, NewEndpointPage } from "./pages/endpoints.js";
import { EventPage, EventsPage } from "./pages/events.js";

export function App({ portal }: { portal: Portal }) {
  const b = portal.base;
  return (
    <PortalContext.Provider value={portal}>
      <LocationProvider scope={b}>
        <Header />
        <main class="container" id="main">
          <Router>
            <Route path={`${b}/`} component={EndpointsPage} />
            <Route path={`${b}/endpoints`} component={EndpointsPage} />
            <Route path={`${b}/endpoints/new`} component={NewEndpointPage} />
            <Route path={`${b}/endpoints/:id`} component={EndpointPage} />
            <Route path={`${b}/deliveries`} component={DeliveriesPage} />
            <Route path={`${b}/deliveries/:id`} component={DeliveryPage} />
            <Route path={`${b}/events`} component={EventsPage} />
            <Route path={`${b}/events/:id`} component={EventPage} />
            <Route default component={NotFound} />
          </Router>
        </main>
      </LocationProvider>
    </PortalContext.Provider>
  );
}

function NotFound() {
  const { base } = usePortal();
  return (
    <article>
      <h1>Page not found</h1>
      <p>
        <a href={`${base}/endpoints`}>Back to the endpoints</a>
      </p>
    </article>
  );
}

/** When the session ends, in words, kept current. */
function SessionClock() {
  const { session } = usePortal();
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 30_000);
    return () => clearInterval(t);
  }, []);
  const ended = new Date(session.expires_at).getTime() <= Date.now();
  return (
    <small class="muted" title={exactTime(session.expires_at)}>
      {ended ? "Session ended" : `Session ends ${relativeTime(session.expires_at)}`}
    </small>
  );
}

function Header() {
  const { base, session, canReadEvents } = usePortal();
  const { path } = useLocation();
  const current = (section: string) => (path.startsWith(`${base}/${section}`) || (section === "endpoints" && path === `${base}/`) ? "page" : undefined);
  return (
    <header class="portal-header">
      <nav class="container">
        <ul>
          <li>
            <a href={`${base}/endpoints`} class="brand">
              <strong>Webhooks</strong>
            </a>
          </li>
        </ul>
        <ul>
          <li>
            <a href={`${base}/endpoints`} aria-current={current("endpoints")}>
              Endpoints
            </a>
          </li>
          <li>
            <a href={`${base}/deliveries`} aria-current={current("deliveries")}>
              Deliveries
            </a>
          </li>
          {canReadEvents && (
            <li>
              <a href={`${base}/events`} aria-current={current("events")}>
                Events
              </a>
            </li>
          )}
        </ul>
      </nav>
      <div class="container session-bar">
        {session.read_only && <span class="badge info">Read-only</span>}
        <SessionClock />
        <form method="post" action={`${base}/sign-out`} class="sign-out">
          <button type="submit" class="secondary outline">
            Sign out
          </button>
        </form>
      </div>
    </header>
  );
}
