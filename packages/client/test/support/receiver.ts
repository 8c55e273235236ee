// A real HTTPS webhook receiver on 127.0.0.1 with a certificate from a CA made at test time
// (the server is told to trust that CA): records each request's headers and raw body.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { once } from "node:events";
import type { IncomingHttpHeaders } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import forge from "node-forge";

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  body: Buffer;
}

export interface Receiver {
  /** `https://<hostname>:<port>` */
  origin: string;
  /** PEM of the CA that issued the receiver's certificate. */
  caCert: string;
  /** The oldest request not yet taken, waiting for one if none is there. */
  nextRequest(timeoutMs?: number): Promise<ReceivedRequest>;
  close(): Promise<void>;
}

function keyPair() {
  const { privateKey: pem } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const privateKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { pem, privateKey, publicKey: forge.pki.setRsaPublicKey(privateKey.n, privateKey.e) };
}

function certificate(subject: string, publicKey: forge.pki.PublicKey, extensions: object[]): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = `01${randomBytes(15).toString("hex")}`;
  cert.validity.notBefore = new Date(Date.now() - 3600_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: "commonName", value: subject }]);
  cert.setExtensions(extensions);
  return cert;
}

function issue(hostname: string): { caCert: string; key: string; cert: string } {
  const ca = keyPair();
  const caCert = certificate("Client Test CA", ca.publicKey, [
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
  ]);
  caCert.setIssuer(caCert.subject.attributes);
  caCert.sign(ca.privateKey, forge.md.sha256.create());
  const leaf = keyPair();
  const leafCert = certificate(hostname, leaf.publicKey, [
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: [{ type: 2, value: hostname }] },
  ]);
  leafCert.setIssuer(caCert.subject.attributes);
  leafCert.sign(ca.privateKey, forge.md.sha256.create());
  return { caCert: forge.pki.certificateToPem(caCert), key: leaf.pem, cert: forge.pki.certificateToPem(leafCert) };
}

export async function startReceiver(hostname: string): Promise<Receiver> {
  const { caCert, key, cert } = issue(hostname);
  const unclaimed: ReceivedRequest[] = [];
  const waiters: Array<(req: ReceivedRequest) => void> = [];
  const server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(204).end();
      const received = { headers: req.headers, body: Buffer.concat(chunks) };
      const waiter = waiters.shift();
      if (waiter) waiter(received);
      else unclaimed.push(received);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://${hostname}:${port}`,
    caCert,
    nextRequest(timeoutMs = 20_000) {
      const ready = unclaimed.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(done), 1);
          reject(new Error(`no webhook request arrived within ${timeoutMs} ms`));
        }, timeoutMs);
        const done = (req: ReceivedRequest) => {
          clearTimeout(timer);
          resolve(req);
        };
        waiters.push(done);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
