// Webhook listeners' streams as a client holds them in the tests: Server-Sent Events read with
// fetch, events parsed as they arrive, and the listener's answers posted back.
import type { CreatedWebhookEndpoint, WebhookDelivery, WebhookDeliveryAttempt } from "@audit-review/api-types/internal";
import { afterEach } from "vitest";
import { remember } from "../harness/factories.js";
import type { Api, TestServer } from "../harness/server.js";

export interface Delivered {
  request_id: string;
  headers: Record<string, string>;
  body: string;
}

/** An open stream of a listener: its events in order, read as they arrive. */
export interface Stream {
  response: Response;
  next(name: string, timeoutMs?: number): Promise<unknown>;
  close(): void;
}

const streams: Stream[] = [];
afterEach(() => {
  for (const s of streams.splice(0)) s.close();
});

export async function openStream(srv: TestServer, token: string, listenerId: string): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(`${srv.url}/v2/webhook_listeners/${listenerId}/stream`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  const events: Array<{ name: string; data: unknown }> = [];
  const waiters: Array<() => void> = [];
  if (response.ok && response.body) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const name = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (name && data) events.push({ name, data: JSON.parse(data) });
            for (const w of waiters.splice(0)) w();
          }
        }
      } catch {
        // aborted by close()
      }
    })();
  }
  const stream: Stream = {
    response,
    async next(name, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = events.findIndex((e) => e.name === name);
        if (i >= 0) return events.splice(i, 1)[0]!.data;
        if (Date.now() > deadline) throw new Error(`no ${name} event within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => controller.abort(),
  };
  streams.push(stream);
  return stream;
}

export async function createListener(api: Api, body: object = {}): Promise<CreatedWebhookEndpoint> {
  const { data, response, error } = await api.POST("/v2/webhook_listeners", { body });
  if (!data) throw new Error(`createWebhookListener answered ${response.status}: ${JSON.stringify(error)}`);
  remember(data.secret);
  return data;
}

export const answer = (api: Api, listenerId: string, body: { request_id: string; status?: number; body?: string; duration_ms: number; error?: { code: "connection_error" | "timeout"; message: string } }) =>
  api.POST("/v2/webhook_listeners/{listener_id}/answers", { params: { path: { listener_id: listenerId } }, body });

export async function deliveryOf(api: Api, eventId: string, endpointId: string): Promise<WebhookDelivery> {
  const { data } = await api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: endpointId, limit: 100 } } });
  return data!.data.find((d) => d.event_id === eventId)!;
}

export async function attemptsOf(api: Api, deliveryId: string): Promise<WebhookDeliveryAttempt[]> {
  const { data } = await api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: deliveryId } } });
  return data!.data;
}

/** Waits until `check` holds (the engine records asynchronously), failing after `timeoutMs`. */
export async function until<T>(srv: TestServer, read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(v)}`);
    srv.server.deps.signal.notify();
    await new Promise((r) => setTimeout(r, 50));
  }
}

