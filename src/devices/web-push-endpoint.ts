import { AppError } from '../errors.js';
import { OutboundUrlRefused, checkOutboundUrl, type OutboundPolicy } from '../lib/outbound-url-policy.js';
import type { RegisterDeviceBody } from './devices.schemas.js';

/**
 * A Web Push endpoint is a URL the tenant's users supply (with the public key) and Herald POSTs to:
 * refused at registration when the policy refuses it without DNS (scheme, userinfo, `localhost`,
 * IP literals in every spelling). Names are judged again at each send, after resolution, on the
 * address connected to; DNS is not consulted here, on the client-SDK path, since its answer may
 * change before any send.
 */
export function checkWebPushEndpoint(
  policy: OutboundPolicy,
  input: Pick<RegisterDeviceBody, 'web_push_subscription'>,
): void {
  const endpoint = input.web_push_subscription?.endpoint;
  if (endpoint === undefined) return;
  try {
    checkOutboundUrl(endpoint, policy);
  } catch (error) {
    if (error instanceof OutboundUrlRefused)
      throw new AppError(
        'invalid',
        'WEB_PUSH_ENDPOINT_REFUSED',
        `web_push_subscription.endpoint refused: ${error.reason}`,
      );
    throw error;
  }
}
