// A real DNS server on 127.0.0.1 (UDP, an ephemeral port) for the resolver's tests: it answers A
// and AAAA queries from a table (NXDOMAIN for names it does not know), or, switched to silent
// (for every name, or for some), receives the queries and never answers. Packets are encoded by dns-packet, not by us.
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { isIPv4, isIPv6 } from "node:net";
import dnsPacket from "dns-packet";

const NXDOMAIN = 3;

export interface TestDnsServer {
  /** what `Resolver.setServers` takes: `127.0.0.1:<port>` */
  address: string;
  /** every question received, as `<type> <name>` */
  queries: string[];
  /** true: receive and never answer */
  silent: boolean;
  /** names received and never answered, while the others are */
  unanswered: Set<string>;
  records: Record<string, string[]>;
  /** once; later calls resolve at once */
  close(): Promise<void>;
}

export async function startDnsServer(records: Record<string, string[]> = {}, { silent = false } = {}): Promise<TestDnsServer> {
  const socket = createSocket("udp4");
  let closing: Promise<void> | undefined;
  const server: TestDnsServer = {
    address: "",
    queries: [],
    silent,
    unanswered: new Set(),
    records,
    close: () => (closing ??= new Promise<void>((resolve) => socket.close(() => resolve()))),
  };
  socket.on("message", (message, from) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    server.queries.push(`${question.type} ${question.name}`);
    if (server.silent || server.unanswered.has(question.name.toLowerCase())) return;
    const known = server.records[question.name.toLowerCase()];
    const family = question.type === "A" ? isIPv4 : question.type === "AAAA" ? isIPv6 : () => false;
    const answers = (known ?? []).filter((a) => family(a)).map((data) => ({ type: question.type as "A" | "AAAA", class: "IN" as const, name: question.name, ttl: 60, data }));
    const response = dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (known ? 0 : NXDOMAIN),
      questions: query.questions,
      answers,
    });
    socket.send(response, from.port, from.address);
  });
  socket.bind(0, "127.0.0.1");
  await once(socket, "listening");
  server.address = `127.0.0.1:${socket.address().port}`;
  socket.unref(); // a test that forgets to close it does not hold the run open
  return server;
}
