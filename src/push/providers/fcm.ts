import type { Device } from '../../devices/devices.service.js';
import type { FcmCredentials } from '../credentials/credentials.service.js';
import type { Http2Pool, Http2Response } from '../http2-pool.js';
import { FCM_MAX_PAYLOAD_BYTES } from '../payload-limits.js';
import { DeliveryStatus, type AttemptResult, type PushMessage } from '../push.types.js';
import { attemptResultOf, parseJsonObject, retryAfterMsOf } from './attempt-failure.js';
import type { FcmTokenSource } from './fcm-auth.js';
import { splitBaseUrl } from './base-url.js';
import { fcmBody } from './fcm-body.js';

interface FcmErrorBody {
  code?: string;
  message: string;
  tokenField: boolean;
  /** `google.rpc.QuotaFailure` violations (`subject`, `description`) and `google.rpc.ErrorInfo` reasons. */
  quota: Array<{ subject: string; description: string }>;
  infoReasons: string[];
}

const TYPE = 'type.googleapis.com/';
const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

function fcmError(body: Record<string, unknown>): FcmErrorBody {
  const error = (typeof body.error === 'object' && body.error !== null ? body.error : {}) as Record<string, unknown>;
  const details = Array.isArray(error.details) ? (error.details as Array<Record<string, unknown>>) : [];
  const ofType = (type: string) => details.filter((d) => d['@type'] === `${TYPE}${type}`);
  const fcmCode = ofType('google.firebase.fcm.v1.FcmError').find((d) => typeof d.errorCode === 'string')?.errorCode as
    string | undefined;
  const violations = ofType('google.rpc.BadRequest').flatMap((d) =>
    Array.isArray(d.fieldViolations) ? (d.fieldViolations as Array<Record<string, unknown>>) : [],
  );
  const quota = ofType('google.rpc.QuotaFailure').flatMap((d) =>
    Array.isArray(d.violations) ? (d.violations as Array<Record<string, unknown>>) : [],
  );
  const message = textOf(error.message);
  return {
    code: fcmCode ?? (typeof error.status === 'string' ? error.status : undefined),
    message,
    tokenField: violations.some((v) => v.field === 'message.token') || /registration token/i.test(message),
    quota: quota.map((v) => ({ subject: textOf(v.subject), description: textOf(v.description) })),
    infoReasons: ofType('google.rpc.ErrorInfo').map((d) => textOf(d.reason)),
  };
}

/** Which quota a 429 is about: a device's message rate backs off that device; anything else paces the project. */
function quotaScopeOf(error: FcmErrorBody): 'device' | 'project' {
  const device = error.quota.length > 0 && error.quota.every((v) => /device/i.test(`${v.subject} ${v.description}`));
  return device ? 'device' : 'project';
}

/** FCM's usual success answer, `{"name": "projects/…/messages/…"}`, read without a JSON parse; anything else is parsed. */
const PLAIN_NAME = /^\{\s*"name"\s*:\s*"([^"\\]*)"\s*\}\s*$/;

function acceptedName(body: Buffer): string | undefined {
  const text = body.toString('utf8');
  const plain = PLAIN_NAME.exec(text);
  if (plain) return plain[1];
  const parsed = parseJsonObject(body);
  return typeof parsed.name === 'string' ? parsed.name : undefined;
}

/** Maps an FCM answer (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode); docs/providers.md lists each. */
export function classifyFcmResponse(response: Http2Response, now: number, quotaExceededDelayMs: number): AttemptResult {
  if (response.status === 200)
    return { status: DeliveryStatus.ACCEPTED, providerMessageId: acceptedName(response.body) };
  const body = parseJsonObject(response.body);
  const error = fcmError(body);
  const reason = error.code ?? `HTTP_${response.status}`;
  const retryAfterMs = retryAfterMsOf(response.headers['retry-after'], now);
  switch (error.code) {
    case 'UNREGISTERED':
      return { status: DeliveryStatus.TOKEN_UNREGISTERED, reason, tokenAction: 'remove' };
    case 'INVALID_ARGUMENT':
      if (error.tokenField) return { status: DeliveryStatus.TOKEN_INVALID, reason, tokenAction: 'disable' };
      if (/too big|too large/i.test(error.message)) return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason };
      return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
    case 'SENDER_ID_MISMATCH':
    case 'THIRD_PARTY_AUTH_ERROR':
      return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, credentialProblem: reason };
    case 'UNAVAILABLE':
    case 'INTERNAL':
      return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
    case 'UNSPECIFIED_ERROR':
      return { status: DeliveryStatus.FAILED, reason };
  }
  if (response.status === 429 || error.code === 'QUOTA_EXCEEDED') {
    // QUOTA_EXCEEDED, or a bare RESOURCE_EXHAUSTED / ErrorInfo RATE_LIMIT_EXCEEDED: Google asks for at least a minute.
    const scope = quotaScopeOf(error);
    const why = error.code === 'QUOTA_EXCEEDED' || error.infoReasons.length === 0 ? reason : error.infoReasons[0]!;
    return {
      status: DeliveryStatus.RATE_LIMITED,
      reason: why,
      retryable: true,
      retryAfterMs,
      minDelayMs: quotaExceededDelayMs,
      quotaScope: scope,
    };
  }
  if (response.status === 401)
    return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, refreshAuth: true, credentialProblem: reason };
  if (response.status === 403) return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, credentialProblem: reason };
  if (response.status >= 500) return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
  if (response.status === 400) return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
  return { status: DeliveryStatus.FAILED, reason };
}

export class FcmSender {
  private readonly origin: string;
  private readonly prefix: string;

  private readonly pool: Http2Pool;
  private readonly auth: FcmTokenSource;
  private readonly quotaExceededDelayMs: number;
  private readonly now: () => number;
  constructor(pool: Http2Pool, auth: FcmTokenSource, apiUrl: string, quotaExceededDelayMs: number, now: () => number) {
    this.pool = pool;
    this.auth = auth;
    this.quotaExceededDelayMs = quotaExceededDelayMs;
    this.now = now;
    ({ origin: this.origin, prefix: this.prefix } = splitBaseUrl(apiUrl));
  }

  async send(
    creds: FcmCredentials,
    device: Device,
    message: PushMessage,
    messageId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    const { body, contentBytes } = fcmBody(message, device.platform, device.pushAddress, messageId);
    if (contentBytes > FCM_MAX_PAYLOAD_BYTES)
      return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason: 'PAYLOAD_TOO_LARGE' };
    try {
      const token = this.auth.cachedToken(creds) ?? (await this.auth.accessToken(creds));
      const response = await this.pool.request(
        this.origin,
        this.headers(creds.projectId, token),
        body,
        timeoutMs,
        '',
        signal,
      );
      const result = classifyFcmResponse(response, this.now(), this.quotaExceededDelayMs);
      if (result.refreshAuth) this.auth.invalidate(creds, token);
      return result;
    } catch (error) {
      return attemptResultOf(error);
    }
  }

  private lastHeaders: { projectId: string; token: string; headers: readonly string[] } | undefined;

  /**
   * The request headers, one raw list while the project and token stay the same: Node reads a list
   * as given, where it would copy an object for every send (http2-pool.ts).
   */
  private headers(projectId: string, token: string): readonly string[] {
    const last = this.lastHeaders;
    if (last && last.projectId === projectId && last.token === token) return last.headers;
    const headers = [
      ':method',
      'POST',
      ':path',
      `${this.prefix}/v1/projects/${encodeURIComponent(projectId)}/messages:send`,
      'authorization',
      `Bearer ${token}`,
      'content-type',
      'application/json; charset=utf-8',
    ];
    this.lastHeaders = { projectId, token, headers };
    return headers;
  }
}
