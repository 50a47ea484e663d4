import dns from 'node:dns/promises';
import net from 'node:net';
import { AppError } from '../errors.js';

/**
 * Webhook destinations (A9): http(s) only, and unless private networks are allowed, every address
 * the host resolves to must be public. The caller connects to the returned address (resolve once,
 * then pin it), so a second DNS answer cannot redirect the request (DNS rebinding).
 */
// Note: BlockList also matches IPv4 addresses against IPv6 rules in ::ffff:0:0/96, so mapped
// addresses are not listed here; `embeddedIpv4` unwraps them and checks the IPv4 rules instead.
const BLOCKED = new net.BlockList();
for (const [net4, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net4, prefix, 'ipv4');
for (const [net6, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net6, prefix, 'ipv6');

/** The 8 16-bit words of an IPv6 address (a trailing dotted IPv4 part included). */
function ipv6Words(ipv6: string): number[] | undefined {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ipv6);
  const text = dotted ? ipv6.slice(0, dotted.index) + (((+dotted[1]! << 8) | +dotted[2]!).toString(16) + ':' + ((+dotted[3]! << 8) | +dotted[4]!).toString(16)) : ipv6;
  const halves = text.toLowerCase().split('::');
  if (halves.length > 2) return undefined;
  const left = halves[0] ? halves[0].split(':') : [];
  const right = halves[1] ? halves[1].split(':') : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((g) => parseInt(g, 16));
}

/** The IPv4 address inside an IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or IPv4-compatible (::/96) address. */
function embeddedIpv4(ipv6: string): string | undefined {
  const words = ipv6Words(ipv6);
  if (!words) return undefined;
  const nat64 = words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0);
  const compatibleOrMapped = words.slice(0, 5).every((w) => w === 0) && (words[5] === 0 || words[5] === 0xffff);
  if (!nat64 && !compatibleOrMapped) return undefined;
  return [words[6]! >> 8, words[6]! & 255, words[7]! >> 8, words[7]! & 255].join('.');
}

/** Whether an address may receive webhooks when private networks are not allowed. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family !== 6) return false;
  if (BLOCKED.check(address, 'ipv6')) return false;
  const inner = embeddedIpv4(address);
  return inner === undefined || !BLOCKED.check(inner, 'ipv4');
}

export interface WebhookTarget {
  url: URL;
  /** The address to connect to. */
  address: string;
  family: 4 | 6;
}

const refused = (message: string): AppError => new AppError('invalid', 'WEBHOOK_URL_REFUSED', message);

export type Lookup = (hostname: string) => Promise<{ address: string; family: number }[]>;
const systemLookup: Lookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * Validates `raw` and resolves its host once. Throws `WEBHOOK_URL_REFUSED` (kind invalid) for a
 * URL that is not http(s) or a host that is private; `WEBHOOK_HOST_UNRESOLVED` when DNS fails.
 */
export async function resolveWebhookTarget(raw: string, allowPrivate: boolean, lookup: Lookup = systemLookup): Promise<WebhookTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused('url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused('url must use http or https');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: { address: string; family: number }[];
  if (net.isIP(host)) {
    addresses = [{ address: host, family: net.isIP(host) }];
  } else {
    try {
      addresses = await lookup(host);
    } catch (error) {
      throw new AppError('invalid', 'WEBHOOK_HOST_UNRESOLVED', `url host ${host} does not resolve`, { cause: error });
    }
  }
  const first = addresses[0];
  if (!first) throw new AppError('invalid', 'WEBHOOK_HOST_UNRESOLVED', `url host ${host} does not resolve`);
  if (!allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
    throw refused(`url host ${host} is a loopback, private, link-local or otherwise reserved address`);
  }
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
