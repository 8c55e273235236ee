import { render } from "preact";
import { App } from "./app.js";
import type { Portal } from "./context.js";
import { portalBase, portalClient, readSession } from "./session.js";

const session = readSession();
const portal: Portal = {
  session,
  client: portalClient(session),
  base: portalBase(session),
  canWrite: !session.read_only && session.scopes.includes("webhooks:write"),
  canReadEvents: session.scopes.includes("events:read"),
  canReadQuestionSets: session.scopes.includes("question_sets:read"),
};
const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<App portal={portal} />, root);
}
