import type { AuditReviewClient } from "@audit-review/client";
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { PortalSession } from "./session.js";

export interface Portal {
  session: PortalSession;
  client: AuditReviewClient;
  /** `/portal/{org_id}`: every link of the page starts here */
  base: string;
  /** false in a read-only session (or a token without webhooks:write): no write is offered */
  canWrite: boolean;
  canReadEvents: boolean;
  canReadQuestionSets: boolean;
}

export const PortalContext = createContext<Portal | null>(null);

export function usePortal(): Portal {
  const portal = useContext(PortalContext);
  if (!portal) throw new Error("usePortal outside the portal");
  return portal;
}
