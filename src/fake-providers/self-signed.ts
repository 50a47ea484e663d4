import crypto from 'node:crypto';

/*
 * A throwaway certificate authority and a loopback server certificate for the provider stand-ins,
 * built with node:crypto and a minimal DER writer (X.509 v3, ECDSA P-256 with SHA-256). Trust the CA
 * through NODE_EXTRA_CA_CERTS, or pass it as `ca` to a client.
 */

const tlv = (tag: number, content: Buffer): Buffer => {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
};
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, content: Buffer) => tlv(0xa0 + n, content);
const octets = (content: Buffer) => tlv(0x04, content);
const bool = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0]));
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
const bits = (content: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), content]));

function integer(value: Buffer | number): Buffer {
  let bytes = typeof value === 'number' ? Buffer.from([value]) : value;
  // DER integers are minimal: a random serial starting 0x00 would be "illegal padding" to OpenSSL.
  while (bytes.length > 1 && bytes[0] === 0 && !(bytes[1]! & 0x80)) bytes = bytes.subarray(1);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const extension = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function keyId(key: crypto.KeyObject): Buffer {
  // RFC 5280 method 1: SHA-1 of the subjectPublicKey bits (the DER SPKI's last 65 bytes for P-256).
  const spki = key.export({ type: 'spki', format: 'der' });
  return crypto
    .createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
}

interface CertSpec {
  subject: string;
  issuer: string;
  publicKey: crypto.KeyObject;
  signingKey: crypto.KeyObject;
  authorityKeyId: Buffer;
  extensions: Buffer[];
}

function certificate(spec: CertSpec): string {
  const now = Date.now();
  const serial = crypto.randomBytes(16);
  serial[0]! &= 0x7f;
  const tbs = seq(
    explicit(0, integer(2)),
    integer(serial),
    ECDSA_SHA256,
    name(spec.issuer),
    seq(time(new Date(now - 3600_000)), time(new Date(now + 5 * 365 * 86400_000))),
    name(spec.subject),
    spec.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(
      3,
      seq(
        ...spec.extensions,
        extension('2.5.29.14', false, octets(keyId(spec.publicKey))),
        extension('2.5.29.35', false, seq(tlv(0x80, spec.authorityKeyId))),
      ),
    ),
  );
  const der = seq(tbs, ECDSA_SHA256, bits(crypto.sign('sha256', tbs, spec.signingKey)));
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
}

export interface LoopbackTls {
  /** The CA certificate (PEM) to trust. */
  caPem: string;
  /** Server certificate for `localhost`, 127.0.0.1 and ::1, signed by the CA. */
  certPem: string;
  keyPem: string;
}

export function createLoopbackTls(): LoopbackTls {
  const ca = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const leaf = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = `Herald provider stand-ins CA ${crypto.randomBytes(4).toString('hex')}`;
  const caPem = certificate({
    subject: caName,
    issuer: caName,
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    authorityKeyId: keyId(ca.publicKey),
    // basicConstraints cA, keyUsage digitalSignature + keyCertSign + cRLSign
    extensions: [
      extension('2.5.29.19', true, seq(bool(true))),
      extension('2.5.29.15', true, bits(Buffer.from([0x86]), 1)),
    ],
  });
  const loopbackV6 = Buffer.alloc(16);
  loopbackV6[15] = 1;
  const certPem = certificate({
    subject: 'localhost',
    issuer: caName,
    publicKey: leaf.publicKey,
    signingKey: ca.privateKey,
    authorityKeyId: keyId(ca.publicKey),
    extensions: [
      extension('2.5.29.19', true, seq()),
      extension('2.5.29.15', true, bits(Buffer.from([0x80]), 7)),
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
      extension(
        '2.5.29.17',
        false,
        seq(tlv(0x82, Buffer.from('localhost')), tlv(0x87, Buffer.from([127, 0, 0, 1])), tlv(0x87, loopbackV6)),
      ),
    ],
  });
  return { caPem, certPem, keyPem: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
