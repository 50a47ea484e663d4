import { TransportError } from '../transport-error.js';
import { DeliveryStatus, type AttemptResult } from '../push.types.js';

/** Thrown inside a provider client to end an attempt with a classified result. */
export class AttemptFailure extends Error {
  readonly result: AttemptResult;
  constructor(result: AttemptResult) {
    super(result.reason ?? result.status);
    this.result = result;
    this.name = 'AttemptFailure';
  }
}

/** Turns what a provider client threw into an attempt result: transport trouble is retryable. */
export function attemptResultOf(error: unknown): AttemptResult {
  if (error instanceof AttemptFailure) return error.result;
  if (error instanceof TransportError) return { status: DeliveryStatus.FAILED, reason: error.code, retryable: true };
  return { status: DeliveryStatus.FAILED, reason: 'INTERNAL_ERROR' };
}

/** `Retry-After` as milliseconds (delay-seconds or an HTTP date), if present and sane. */
export function retryAfterMsOf(value: string | string[] | undefined, now: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function parseJsonObject(body: Buffer): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
