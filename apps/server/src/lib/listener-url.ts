// A webhook listener is a webhook endpoint whose `url` is `listener:<its id>`: not a network
// address (the server never connects anywhere for it) but the name of the stream its deliveries
// go through. HTTPS URLs are the only other kind an endpoint can have.
const PREFIX = "listener:";

export const listenerUrl = (id: string): string => `${PREFIX}${id}`;

/** The listener id of a `listener:` URL; null for any other URL. */
export function listenerIdOf(url: string): string | null {
  return url.startsWith(PREFIX) ? url.slice(PREFIX.length) : null;
}
