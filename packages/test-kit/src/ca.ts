// The one test CA of the repository: tests, CI scripts and the bench issue their receivers'
// certificates from it, and hand its PEM to the server as the extra trusted root.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

export interface IssuedCert {
  key: string;
  cert: string;
}

export interface TestCa {
  /** PEM of the CA certificate: what a client adds to its trusted roots */
  cert: string;
  /** A leaf for `hostnames` (first one is the subject), also valid for 127.0.0.1. */
  issue(hostnames: readonly string[]): IssuedCert;
}

// Node's native RSA key generation is far faster than forge's pure-JS one; forge only builds certs.
function rsaKeyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; pem: string } {
  const { privateKey: pem } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const privateKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  const publicKey = forge.pki.setRsaPublicKey(privateKey.n, privateKey.e);
  return { privateKey, publicKey, pem };
}

function serial(): string {
  // Positive, non-zero: the high bit cleared.
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString("hex");
}

function validity(cert: forge.pki.Certificate): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  cert.validity.notAfter = new Date(now + 24 * 60 * 60 * 1000);
}

function buildCa(name: string): TestCa {
  const caKeys = rsaKeyPair();
  const caCert = forge.pki.createCertificate();
  caCert.publicKey = caKeys.publicKey;
  caCert.serialNumber = serial();
  validity(caCert);
  const subject = [{ name: "commonName", value: name }];
  caCert.setSubject(subject);
  caCert.setIssuer(subject);
  caCert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  caCert.sign(caKeys.privateKey, forge.md.sha256.create());

  const issued = new Map<string, IssuedCert>();
  return {
    cert: forge.pki.certificateToPem(caCert),
    issue(hostnames) {
      // Leaf key generation dominates receiver start-up; the same names can share one leaf.
      const cacheKey = hostnames.join(",");
      const cached = issued.get(cacheKey);
      if (cached) return cached;
      const keys = rsaKeyPair();
      const cert = forge.pki.createCertificate();
      cert.publicKey = keys.publicKey;
      cert.serialNumber = serial();
      validity(cert);
      cert.setSubject([{ name: "commonName", value: hostnames[0] ?? "localhost" }]);
      cert.setIssuer(caCert.subject.attributes);
      cert.setExtensions([
        { name: "basicConstraints", cA: false },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
        { name: "extKeyUsage", serverAuth: true },
        {
          name: "subjectAltName",
          altNames: [...hostnames.map((value) => ({ type: 2, value })), { type: 7, ip: "127.0.0.1" }],
        },
      ]);
      cert.sign(caKeys.privateKey, forge.md.sha256.create());
      const leaf = { key: keys.pem, cert: forge.pki.certificateToPem(cert) };
      issued.set(cacheKey, leaf);
      return leaf;
    },
  };
}

let shared: TestCa | undefined;

/**
 * The process-wide test CA (made once: key generation is the slow part). Pass `{ fresh: true }`
 * for an unrelated CA, e.g. to serve a certificate the client must not trust.
 */
export function createTestCa({ fresh = false }: { fresh?: boolean } = {}): TestCa {
  if (fresh) return buildCa(`Untrusted Test CA ${serial().slice(0, 8)}`);
  shared ??= buildCa("Audit Review Test CA");
  return shared;
}
