import type { AddressInfo } from "node:net";

/** The port a listening TCP server got (port 0 asks the OS for a free one). */
export function boundPort(address: AddressInfo | string | null): number {
  if (address === null || typeof address === "string") throw new Error("the server is not listening on a TCP port");
  return address.port;
}
