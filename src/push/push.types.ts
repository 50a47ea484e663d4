import type { Device, Provider } from '../devices/devices.service.js';

export type { Provider };

/** Rule `delivery-status`: the delivery status enum (wire values). */
export const DeliveryStatus = {
  UNSPECIFIED: 'DELIVERY_RESULT_STATUS_UNSPECIFIED',
  ACCEPTED: 'DELIVERY_RESULT_STATUS_ACCEPTED',
  TOKEN_UNREGISTERED: 'DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED',
  TOKEN_INVALID: 'DELIVERY_RESULT_STATUS_TOKEN_INVALID',
  INVALID_PAYLOAD: 'DELIVERY_RESULT_STATUS_INVALID_PAYLOAD',
  PROVIDER_AUTH_ERROR: 'DELIVERY_RESULT_STATUS_PROVIDER_AUTH_ERROR',
  RATE_LIMITED: 'DELIVERY_RESULT_STATUS_RATE_LIMITED',
  /** The message does not fit this device's provider (byte limits per provider); nothing was sent. */
  PAYLOAD_TOO_LARGE: 'DELIVERY_RESULT_STATUS_PAYLOAD_TOO_LARGE',
  FAILED: 'DELIVERY_RESULT_STATUS_FAILED',
  NO_DEVICE: 'DELIVERY_RESULT_STATUS_NO_DEVICE',
  SKIPPED: 'DELIVERY_RESULT_STATUS_SKIPPED',
} as const;
export type DeliveryStatus = (typeof DeliveryStatus)[keyof typeof DeliveryStatus];

/** A rendered notification, provider-neutral. `data` values are strings (FCM requires it). */
export interface PushMessage {
  title?: string | undefined;
  body?: string | undefined;
  imageUrl?: string | undefined;
  landingUrl?: string | undefined;
  data?: Record<string, string> | undefined;
}

/** One request item as on the wire (snake_case); the A2A skill maps its camelCase to this. */
export interface PushItem {
  target: { project_user_id?: string; device_id?: string };
  title?: string;
  body?: string;
  image_url?: string;
  landing_url?: string;
}

/** One device's outcome inside a result (`deliveries[]`, an additive field, rule `push-results`). */
export interface DeviceDelivery {
  message_id: string;
  device_id: string;
  provider: Provider;
  status: DeliveryStatus;
  fcm_message_id: string;
  failure_reason: string;
}

/**
 * One response item (wire shape). `status` and `created_at` are present on the device variant
 * (`/api/v1/send-push-notifications`) only, as rule `push-results` has it.
 */
export interface DeliveryResult {
  message_id: string;
  status?: DeliveryStatus;
  additional_params: { device_id: string; fcm_message_id: string; failure_reason: string };
  created_at?: string;
  deliveries: DeviceDelivery[];
}

/** What a send to one device ended as (campaign fan-out and the REST sends read this). */
export interface DeviceSendOutcome {
  deviceId: string;
  provider: Provider;
  status: DeliveryStatus;
  /** Herald's id of this send (`message_id` on the wire); unique per device send. */
  messageId: string;
  /** The provider's id: FCM `name`, APNs `apns-id`, Web Push `Location`. */
  providerMessageId?: string;
  /** The provider's raw code (`UNREGISTERED`, `BadDeviceToken`, `HTTP_410`) or Herald's own when no provider answered. */
  failureReason?: string;
  /** What token hygiene did to the device. */
  tokenAction?: 'removed' | 'disabled';
  /** A configuration error of the project's credentials (recorded on them; the device stays active). */
  credentialProblem?: string;
  attempts: number;
  createdAt: number;
  completedAt: number;
}

/** One provider attempt, classified; the dispatcher decides about retries. */
export interface AttemptResult {
  status: DeliveryStatus;
  reason?: string | undefined;
  providerMessageId?: string | undefined;
  /** Worth another attempt (429, 5xx, timeouts, resets). */
  retryable?: boolean;
  /** The provider's Retry-After, in ms. */
  retryAfterMs?: number | undefined;
  /** The smallest wait before the next attempt (FCM QUOTA_EXCEEDED: one minute). */
  minDelayMs?: number | undefined;
  /** Retry once at once with fresh provider auth (expired access token or provider JWT). */
  refreshAuth?: boolean;
  tokenAction?: 'remove' | 'disable';
  /**
   * The project's credentials or provider settings are wrong (not the device): the code recorded on
   * the credentials (`GET /api/v1/push-credentials`) and counted in metrics. Devices stay active.
   */
  credentialProblem?: string | undefined;
  /**
   * Whose rate a 429 is about: `device` (FCM per-device quota, APNs TooManyRequests) backs off that
   * send only; `project` (FCM project quota) paces every send of the provider project.
   */
  quotaScope?: 'device' | 'project' | undefined;
  /** APNs 410 `timestamp`: when the token stopped being valid (a registration after it wins). */
  unregisteredAt?: number | undefined;
}

/** One message to one device. */
export interface DeviceSend {
  device: Device;
  message: PushMessage;
  /** `projectUserId`: the send answers a user target (recorded as such); `triggerId`, `campaignId`: a campaign trigger's send. */
  refs?: { triggerId?: string; campaignId?: string; projectUserId?: string; variant?: string };
}

/** Told about every finished batch of device sends (REST sends and campaign fan-out alike): the metrics hook, implemented in observability/. */
export interface PushObserver {
  sendsFinished(outcomes: readonly DeviceSendOutcome[]): void;
}
