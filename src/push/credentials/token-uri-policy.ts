import type { Config } from '../../config.js';
import { invalid } from '../../errors.js';
import { OutboundUrlRefused, checkOutboundUrl, type OutboundPolicy } from '../../lib/outbound-url-policy.js';

/**
 * Where an FCM service account's `token_uri` may point: a signed JWT is POSTed there, so it is a
 * tenant URL like any other, and narrower still: Google's token endpoints, hosts the operator lists
 * in FCM_TOKEN_URI_HOSTS, or the origin of FCM_API_URL (operator-configured, so trusted; that is
 * how the local stand-in's token endpoint passes).
 */
export interface TokenUriRules {
  outbound: OutboundPolicy;
  /** Origins trusted as the operator configured them (FCM_API_URL's). */
  trustedOrigins: readonly string[];
  /** FCM_TOKEN_URI_HOSTS: `host` or `host:port`, lowercase. */
  extraHosts: readonly string[];
  /** Any https host passes (the operator's own command line); the connection is still checked at use. */
  anyHost?: boolean;
}

/**
 * For `bin/herald credentials set-fcm`: the operator is trusted with any https token_uri (e.g. the
 * local stand-in's). At use the server still allows only FCM_API_URL's origin, Google's hosts and
 * FCM_TOKEN_URI_HOSTS, through the outbound policy.
 */
export const OPERATOR_TOKEN_URI_RULES: TokenUriRules = {
  outbound: { allowPrivateNetworks: true },
  trustedOrigins: [],
  extraHosts: [],
  anyHost: true,
};

export function tokenUriRulesOf(
  config: Pick<Config, 'fcmApiUrl' | 'fcmTokenUriHosts' | 'outboundAllowPrivateNetworks'>,
): TokenUriRules {
  return {
    outbound: { allowPrivateNetworks: config.outboundAllowPrivateNetworks },
    trustedOrigins: [new URL(config.fcmApiUrl).origin],
    extraHosts: config.fcmTokenUriHosts,
  };
}

/** Why a token_uri on an untrusted origin is refused by host (Google's, or the operator's list), or undefined. */
export function tokenUriHostRefusal(url: URL, extraHosts: readonly string[]): string | undefined {
  const host = url.host.toLowerCase();
  if (host === 'oauth2.googleapis.com') return undefined;
  if (host === 'www.googleapis.com' && url.pathname.startsWith('/oauth2/')) return undefined;
  if (extraHosts.includes(host)) return undefined;
  return `token_uri must be Google's token endpoint (https://oauth2.googleapis.com/token), not ${host}; an operator may allow other hosts in FCM_TOKEN_URI_HOSTS`;
}

/** Checks a token_uri when credentials are stored (400 INVALID_SERVICE_ACCOUNT); the connection is checked again at use. */
export function checkTokenUri(uri: string, rules: TokenUriRules): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalid('INVALID_SERVICE_ACCOUNT', 'token_uri must be an https URL');
  }
  if (url.protocol !== 'https:') throw invalid('INVALID_SERVICE_ACCOUNT', 'token_uri must be an https URL');
  if (rules.anyHost || rules.trustedOrigins.includes(url.origin)) return;
  const hostRefusal = tokenUriHostRefusal(url, rules.extraHosts);
  if (hostRefusal) throw invalid('INVALID_SERVICE_ACCOUNT', hostRefusal);
  try {
    checkOutboundUrl(url, rules.outbound);
  } catch (error) {
    if (error instanceof OutboundUrlRefused)
      throw invalid('INVALID_SERVICE_ACCOUNT', `token_uri refused: ${error.reason}`);
    throw error;
  }
}
