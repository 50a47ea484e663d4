/**
 * The providers' own send limits and Herald's default pacing below them (docs/operations.md,
 * "Provider quotas"). FCM HTTP v1 allows 600,000 sends a minute per Firebase project by default;
 * Herald's bucket takes 90% of it, so retries, a second sender on the same Firebase project and
 * the clock skew between instances sharing the bucket stay under the provider's limit instead of
 * drawing 429s that hold the whole project. APNs publishes no per-minute limit: its figure is
 * Herald's own pacing per topic.
 */
export const PROVIDER_LIMITS_PER_MINUTE = { fcm: 600_000 } as const;

/** The share of a provider's published limit Herald's default bucket uses. */
export const QUOTA_HEADROOM = 0.9;

export const DEFAULT_QUOTAS_PER_MINUTE = {
  fcm: Math.floor(PROVIDER_LIMITS_PER_MINUTE.fcm * QUOTA_HEADROOM),
  apns: 300_000,
} as const;
