// A throwaway CA and a leaf certificate for the loopback HTTPS receiver, made at run time (the
// approach of apps/server/test/harness/certs.ts: Node generates the RSA keys, node-forge signs).
import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

function keyPair() {
  const { privateKey: pem } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const privateKey = forge.pki.privateKeyFromPem(pem);
  return { privateKey, publicKey: forge.pki.setRsaPublicKey(privateKey.n, privateKey.e), pem };
}

function serial() {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString("hex");
}

function validFor(cert) {
  cert.validity.notBefore = new Date(Date.now() - 3600_000);
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
}

/** `{ ca, key, cert }` PEMs: a CA, and a leaf for `hostnames` signed by it. */
export function makeCerts(hostnames) {
  const caKeys = keyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serial();
  validFor(ca);
  const caName = [{ name: "commonName", value: "ARS Bench CA" }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const leafKeys = keyPair();
  const leaf = forge.pki.createCertificate();
  leaf.publicKey = leafKeys.publicKey;
  leaf.serialNumber = serial();
  validFor(leaf);
  leaf.setSubject([{ name: "commonName", value: hostnames[0] }]);
  leaf.setIssuer(ca.subject.attributes);
  leaf.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: hostnames.map((value) => ({ type: 2, value })) },
  ]);
  leaf.sign(caKeys.privateKey, forge.md.sha256.create());
  return { ca: forge.pki.certificateToPem(ca), key: leafKeys.pem, cert: forge.pki.certificateToPem(leaf) };
}
