// The portal's plain pages: what a browser sees instead of the portal when a link cannot be used
// or a session has ended. Static text, the portal's stylesheet, no script; never a stack trace.
import type { LinkState } from "../services/portal-sessions.service.js";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface PlainPage {
  status: number;
  title: string;
  message: string;
  /** a same-origin path the page moves on to by itself (meta refresh: no script needed) */
  next?: string;
}

export function renderPlainPage(page: PlainPage, stylesheet: string): string {
  const refresh = page.next ? `\n<meta http-equiv="refresh" content="0; url=${escapeHtml(page.next)}">` : "";
  const link = page.next ? `\n<p><a href="${escapeHtml(page.next)}">Continue to the webhook portal</a></p>` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">${refresh}
<title>${escapeHtml(page.title)} · Webhook portal</title>
<link rel="stylesheet" href="${escapeHtml(stylesheet)}">
</head>
<body class="plain-page">
<main class="container plain">
<h1>${escapeHtml(page.title)}</h1>
<p>${escapeHtml(page.message)}</p>${link}
</main>
</body>
</html>
`;
}

const ASK = "Ask the service you integrate with for a new portal link.";

/** The page for a link that cannot start a session. */
export function refusedLinkPage(state: LinkState): PlainPage {
  switch (state) {
    case "used":
      return { status: 410, title: "This link has already been used", message: `A portal link works once. ${ASK}` };
    case "expired":
      return { status: 410, title: "This link has expired", message: `A portal link works for a few minutes only. ${ASK}` };
    case "revoked":
      return { status: 410, title: "This link is no longer valid", message: `The access it was made with has been withdrawn. ${ASK}` };
    default:
      return { status: 404, title: "This link is not valid", message: `Check that the whole link was copied. ${ASK}` };
  }
}

export const PAGES = {
  sessionEnded: { status: 401, title: "Your portal session has ended", message: `Sessions end after an hour, when you sign out, or when access is withdrawn. ${ASK}` },
  signedOut: { status: 200, title: "You are signed out", message: `Your portal session has ended. ${ASK}` },
  noLink: { status: 404, title: "The webhook portal opens from a link", message: ASK },
  notFound: { status: 404, title: "Page not found", message: "There is no such page in the webhook portal." },
  crossOrigin: { status: 403, title: "Request refused", message: "The request did not come from a page of the webhook portal." },
  starting: (next: string): PlainPage => ({ status: 200, title: "Opening the webhook portal", message: "Your session has started.", next }),
} satisfies Record<string, PlainPage | ((next: string) => PlainPage)>;
