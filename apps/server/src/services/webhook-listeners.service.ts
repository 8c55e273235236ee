import type { WebhookListenerAnswer } from "@audit-review/api-types/internal";
import type { AuthContext } from "../auth/context.js";
import { EndpointDisabledError, ListenerInUseError, NotFoundError, ValidationError } from "../lib/errors.js";
import type { WebhookListenersRepo } from "../repos/webhook-listeners.repo.js";

/** One stream, as the HTTP layer writes it (Server-Sent Events). */
export interface StreamSink {
  /** false once the stream is over */
  event(name: string, data: unknown): boolean;
  comment(text: string): boolean;
  /** Ends the stream from the server's side, with a last `closed` event saying why. */
  close(reason: string): void;
}

/** The streams of this process's listeners: the delivery engine's listener transport. */
export interface ListenerStreams {
  connect(
    owner: { orgId: string; tokenId: string },
    listenerId: string,
    sink: StreamSink,
  ): Promise<{ kind: "connected"; disconnect(why: "client" | "slow_client"): void } | { kind: "not_found" | "in_use" | "disabled" }>;
  answer(listenerId: string, answer: WebhookListenerAnswer): Promise<void>;
}

export interface WebhookListenersDeps {
  listeners: WebhookListenersRepo;
  streams: ListenerStreams;
}

/** What an answer may not say together (the contract: exactly one of status and error, a body only with a status). */
function answerIssues(a: WebhookListenerAnswer): { name: string; message: string }[] {
  const issues: { name: string; message: string }[] = [];
  if (a.status === undefined && a.error === undefined) {
    const message = "exactly one of status and error is required";
    issues.push({ name: "status", message }, { name: "error", message });
  } else if (a.status !== undefined && a.error !== undefined) {
    issues.push({ name: "error", message: "must not be given with status (exactly one of status and error)" });
  }
  if (a.error !== undefined && a.body !== undefined) {
    issues.push({ name: "body", message: "must not be given with error: a body is what a receiver answered, and an error says none arrived" });
  }
  return issues;
}

export function webhookListenersService({ listeners, streams }: WebhookListenersDeps) {
  const notFound = () => new NotFoundError("No webhook listener with this id exists in your org.");

  return {
    /** Connects the listener to this stream; resolves with what ends it from the client's side (it left, or stopped reading). */
    async streamWebhookListener(auth: AuthContext, listenerId: string, sink: StreamSink): Promise<(why: "client" | "slow_client") => void> {
      const result = await streams.connect({ orgId: auth.orgId, tokenId: auth.tokenId }, listenerId, sink);
      switch (result.kind) {
        case "connected":
          return result.disconnect;
        case "not_found":
          throw notFound();
        case "in_use":
          throw new ListenerInUseError();
        case "disabled":
          throw new EndpointDisabledError();
      }
    },

    async answerWebhookListenerRequest(auth: AuthContext, listenerId: string, answer: WebhookListenerAnswer): Promise<void> {
      const issues = answerIssues(answer);
      if (issues.length) throw ValidationError.many("body", issues);
      if (!(await listeners.isLive(auth.orgId, listenerId))) throw notFound();
      await streams.answer(listenerId, answer);
    },
  };
}

export type WebhookListenersService = ReturnType<typeof webhookListenersService>;
