export {
  createClient,
  type AuditReviewClient,
  type BackwardQuery,
  type CallOptions,
  type ClientOptions,
  type CreatePortalSessionBody,
  type ForwardQuery,
  type ListCodingEvaluationsQuery,
  type ListEventsQuery,
  type ListItem,
  type ListPage,
  type ListPath,
  type ListQuery,
  type ListQuestionSetsQuery,
  type ListWebhookDeliveriesQuery,
  type ListWebhookDeliveryAttemptsQuery,
  type ListWebhookEndpointsQuery,
  type PostOptions,
  type RecoverBody,
  type RotateSecretBody,
  type WebhookEndpointUpdateBody,
} from "./client.js";
export { ApiError, isProblem } from "./errors.js";
export { bearerAuth, type TokenSource } from "./middleware/auth.js";
// The contract's types (schemas, `paths`, `operations`), so users need only this package.
export type * from "@audit-review/api-types";
