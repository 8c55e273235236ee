import type { WebhookListenerAnswer } from "@audit-review/api-types/internal";
import type { AuthContext } from "../auth/context.js";
import { EndpointLimitReachedError, ListenerInUseError, NotFoundError, ValidationError } from "../lib/errors.js";
import type { WebhookListenersRepo } from "../repos/webhook-listeners.repo.js";
import { ENDPOINT_LIMIT } from "./webhook-endpoints.service.js";

/** One stream, as the HTTP layer writes it (Server-Sent Events). */
export interface StreamSink {
  event(name: string, data: unknown): void;
  comment(text: string): void;
  end(): void;
}

/** The streams of this process's listeners: the delivery engine's listener hub. */
export interface ListenerStreams {
  connect(
    orgId: string,
    listenerId: string,
    sink: StreamSink,
  ): Promise<{ kind: "connected"; disconnect(): void } | { kind: "not_found" | "in_use" | "limit_reached" }>;
  answer(listenerId: string, answer: WebhookListenerAnswer): Promise<void>;
}

export interface WebhookListenersDeps {
  listeners: WebhookListenersRepo;
  streams: ListenerStreams;
}

export function webhookListenersService({ listeners, streams }: WebhookListenersDeps) {
  const notFound = () => new NotFoundError("No webhook listener with this id exists in your org.");

  return {
    /** Connects the listener to this stream; resolves with what closes it from the client's side. */
    async streamWebhookListener(auth: AuthContext, listenerId: string, sink: StreamSink): Promise<() => void> {
      const result = await streams.connect(auth.orgId, listenerId, sink);
      switch (result.kind) {
        case "connected":
          return result.disconnect;
        case "not_found":
          throw notFound();
        case "in_use":
          throw new ListenerInUseError();
        case "limit_reached":
          throw new EndpointLimitReachedError(ENDPOINT_LIMIT);
      }
    },

    async answerWebhookListenerRequest(auth: AuthContext, listenerId: string, answer: WebhookListenerAnswer): Promise<void> {
      if ((answer.status === undefined) === (answer.error === undefined)) {
        const message = "exactly one of status and error is required";
        throw new ValidationError("body", "status", message, [{ location: "body", name: "error", message }]);
      }
      if (!(await listeners.isLive(auth.orgId, listenerId))) throw notFound();
      await streams.answer(listenerId, answer);
    },
  };
}

export type WebhookListenersService = ReturnType<typeof webhookListenersService>;
