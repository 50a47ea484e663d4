import dns from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The one policy for every URL a tenant supplies (webhooks, Web Push endpoints, FCM token_uri):
 * only public unicast addresses, judged on the address actually connected to. Operator-configured
 * URLs (FCM_API_URL, APNS_*_API_URL) never pass through here.
 */
export interface OutboundPolicy {
  /** OUTBOUND_ALLOW_PRIVATE_NETWORKS (alias WEBHOOK_ALLOW_PRIVATE_NETWORKS): local development only. */
  allowPrivateNetworks: boolean;
  /** Name resolution; the system resolver unless a test gives its own. */
  lookup?: Lookup;
  /** Bound on one name resolution (default 3 s). */
  resolveTimeoutMs?: number;
}

export type Lookup = (hostname: string) => Promise<{ address: string; family: number }[]>;
const systemLookup: Lookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/** A tenant URL or address the policy refuses; `reason` is safe to show (it never holds the full URL). */
export class OutboundUrlRefused extends Error {
  readonly code = 'OUTBOUND_URL_REFUSED';
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
    this.name = 'OutboundUrlRefused';
  }
}

/** A name that did not resolve (or not in time): not a refusal, the destination may come back. */
export class OutboundHostUnresolved extends Error {
  readonly code = 'OUTBOUND_HOST_UNRESOLVED';
  readonly host: string;
  constructor(host: string, options?: { cause?: unknown }) {
    super(`url host ${host} does not resolve`, options);
    this.host = host;
    this.name = 'OutboundHostUnresolved';
  }
}

/**
 * Why `address` may not be reached, or undefined for a public unicast address. Only ipaddr.js's
 * `unicast` range passes: loopback, private, link-local, unique-local, CGNAT, multicast, broadcast,
 * unspecified, reserved, documentation, benchmarking and the like are all other ranges. Every IPv6
 * form that carries an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) is refused whole, so
 * no spelling of 127.0.0.1 or 169.254.169.254 slips through as "IPv6 unicast".
 */
export function refusedAddressReason(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[(.*)\]$/, '$1'));
  } catch {
    return 'not an IP address';
  }
  const range = parsed.range();
  if (
    range === 'unicast' &&
    parsed.kind() === 'ipv6' &&
    (parsed as ipaddr.IPv6).parts.slice(0, 5).every((word) => word === 0)
  )
    return 'an IPv4-compatible IPv6 address';
  if (range === 'unicast') return undefined;
  return `${/^[aeiou]/i.test(range) ? 'an' : 'a'} ${range} address`;
}

export const isPublicAddress = (address: string): boolean => refusedAddressReason(address) === undefined;

const LOCAL_NAMES = /(^|\.)localhost\.?$/i;
const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * The checks that need no DNS: an absolute URL with an allowed scheme, no `user:password@`, and a
 * host that is neither a `localhost` name nor (unless private networks are allowed) a refused IP
 * literal. The WHATWG parser has already turned decimal, octal, hex and short IPv4 spellings into
 * dotted form, so `2130706433`, `0x7f.1` and `017700000001` are seen as 127.0.0.1 here.
 */
export function checkOutboundUrl(
  raw: string | URL,
  policy: OutboundPolicy,
  protocols: readonly string[] = ['https:'],
): URL {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new OutboundUrlRefused(`url must be an absolute ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`);
  }
  if (!protocols.includes(url.protocol))
    throw new OutboundUrlRefused(`url must use ${protocols.map((p) => p.slice(0, -1)).join(' or ')}`);
  if (url.username !== '' || url.password !== '')
    throw new OutboundUrlRefused('url must not carry credentials (user:password@)');
  const host = bareHost(url);
  if (policy.allowPrivateNetworks) return url;
  if (LOCAL_NAMES.test(host)) throw new OutboundUrlRefused(`url host ${host} is a loopback name`);
  if (ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host))) {
    const reason = refusedAddressReason(host);
    if (reason) throw new OutboundUrlRefused(`url host ${host} is ${reason}`);
  }
  return url;
}

async function resolveBounded(host: string, policy: OutboundPolicy): Promise<{ address: string; family: number }[]> {
  const timeoutMs = policy.resolveTimeoutMs ?? 3000;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      (policy.lookup ?? systemLookup)(host),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface OutboundTarget {
  url: URL;
  /** The checked address to connect to, and only this one. */
  address: string;
  family: 4 | 6;
}

/**
 * Resolves the URL's host once and checks every answer (one refused answer refuses the host: the
 * resolver's order may change between calls). The caller connects to `address`, so a second DNS
 * answer cannot redirect the request (DNS rebinding).
 */
export async function resolveOutboundTarget(
  raw: string | URL,
  policy: OutboundPolicy,
  protocols: readonly string[] = ['https:'],
): Promise<OutboundTarget> {
  const url = checkOutboundUrl(raw, policy, protocols);
  const host = bareHost(url);
  let answers: { address: string; family: number }[];
  if (ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host))) {
    answers = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      answers = await resolveBounded(host, policy);
    } catch (error) {
      throw new OutboundHostUnresolved(host, { cause: error });
    }
  }
  const first = answers[0];
  if (!first) throw new OutboundHostUnresolved(host);
  if (!policy.allowPrivateNetworks) {
    for (const answer of answers) {
      const reason = refusedAddressReason(answer.address);
      if (reason) throw new OutboundUrlRefused(`url host ${host} resolves to ${reason}`);
    }
  }
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

/**
 * A `lookup` for http(s) agents and sockets: resolves through the policy, refuses a refused answer
 * before any socket exists, and hands the socket exactly the address that was checked.
 */
export function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    const host = hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname;
    Promise.resolve(`https://${host}/`)
      .then((url) => resolveOutboundTarget(url, policy))
      .then(
        (target) => {
          if (options.all) callback(null, [{ address: target.address, family: target.family }]);
          else callback(null, target.address, target.family);
        },
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
      );
  };
}

/** A lookup that answers only `target`'s address (the one already checked). */
export function pinnedLookup(target: OutboundTarget): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
