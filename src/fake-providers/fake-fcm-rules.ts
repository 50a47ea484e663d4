/*
 * What FCM HTTP v1 documents about a send, as the stand-in enforces it: the message fields it
 * knows (unknown ones are refused the way Google's JSON parser refuses them), reserved data keys,
 * the 4,096-byte limit, and the documented error bodies (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode,
 * google.rpc error details).
 */

const FCM_ERROR = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';
const QUOTA_FAILURE = 'type.googleapis.com/google.rpc.QuotaFailure';
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
export const MAX_PAYLOAD_BYTES = 4096;

export interface FcmAnswer {
  status: number;
  body: object;
  headers?: Record<string, string>;
}

export function fcmError(
  code: number,
  status: string,
  message: string,
  errorCode?: string,
  extra: object[] = [],
): object {
  return {
    error: { code, message, status, details: [...(errorCode ? [{ '@type': FCM_ERROR, errorCode }] : []), ...extra] },
  };
}

const fieldViolation = (field: string, description: string) => ({
  '@type': BAD_REQUEST,
  fieldViolations: [{ field, description }],
});

function invalidArgument(field: string, description: string): FcmAnswer {
  return {
    status: 400,
    body: fcmError(400, 'INVALID_ARGUMENT', description, 'INVALID_ARGUMENT', [fieldViolation(field, description)]),
  };
}

/** The fields of each object of a v1 `Message` (as far as Herald could use them); anything else is "Unknown name". */
const KNOWN: Record<string, Set<string>> = {
  message: new Set([
    'name',
    'data',
    'notification',
    'android',
    'webpush',
    'apns',
    'fcm_options',
    'token',
    'topic',
    'condition',
  ]),
  'message.notification': new Set(['title', 'body', 'image']),
  'message.fcm_options': new Set(['analytics_label']),
  'message.webpush': new Set(['headers', 'data', 'notification', 'fcm_options']),
  'message.webpush.fcm_options': new Set(['link', 'analytics_label']),
  'message.apns': new Set(['headers', 'payload', 'fcm_options', 'live_activity_token']),
  'message.apns.fcm_options': new Set(['analytics_label', 'image']),
  'message.android': new Set([
    'collapse_key',
    'priority',
    'ttl',
    'restricted_package_name',
    'data',
    'notification',
    'fcm_options',
    'direct_boot_ok',
  ]),
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const unknownName = (name: string, at: string): FcmAnswer => {
  const description = `Invalid JSON payload received. Unknown name "${name}" at '${at}': Cannot find field.`;
  return {
    status: 400,
    body: {
      error: {
        code: 400,
        message: description,
        status: 'INVALID_ARGUMENT',
        details: [{ '@type': BAD_REQUEST, fieldViolations: [{ field: at, description }] }],
      },
    },
  };
};

function unknownField(value: Record<string, unknown>, path: string): FcmAnswer | undefined {
  const known = KNOWN[path];
  if (!known) return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (!known.has(key)) return unknownName(key, path);
    if (isObject(child)) {
      const inner = unknownField(child, `${path}.${key}`);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** Data keys FCM uses itself ("from", "gcm", anything prefixed "google"). */
const reservedKey = (key: string): boolean =>
  key === 'from' || key === 'notification' || key === 'message_type' || /^(google|gcm)(\.|$)/i.test(key);

/** Checks a request body; an answer when FCM would refuse it, else the message and its token. */
export function checkSend(
  raw: Buffer,
): { refused: FcmAnswer; message?: Record<string, unknown> } | { message: Record<string, unknown>; token: string } {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return {
      refused: {
        status: 400,
        body: fcmError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unexpected token.'),
      },
    };
  }
  if (!isObject(body))
    return { refused: { status: 400, body: fcmError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.') } };
  for (const key of Object.keys(body))
    if (key !== 'message' && key !== 'validate_only') return { refused: unknownName(key, '') };
  const message = body.message;
  if (!isObject(message)) return { refused: invalidArgument('message', 'Request contains an invalid argument.') };
  const unknown = unknownField(message, 'message');
  if (unknown) return { refused: unknown, message };
  const targets = ['token', 'topic', 'condition'].filter((k) => message[k] !== undefined);
  if (targets.length !== 1 || typeof message.token !== 'string' || message.token === '')
    return {
      refused: invalidArgument('message.token', 'The registration token is not a valid FCM registration token'),
      message,
    };
  const data = message.data;
  if (data !== undefined) {
    if (!isObject(data))
      return { refused: invalidArgument('message.data', "Invalid value at 'message.data'"), message };
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string')
        return {
          refused: invalidArgument(
            `message.data[${key}].value`,
            `Invalid value at 'message.data[0].value' (TYPE_STRING), ${JSON.stringify(value)}`,
          ),
          message,
        };
      if (reservedKey(key))
        return { refused: invalidArgument('message.data', `Invalid data payload key: ${key}`), message };
    }
  }
  const { token, ...content } = message;
  if (Buffer.byteLength(JSON.stringify(content)) > MAX_PAYLOAD_BYTES)
    return {
      refused: { status: 400, body: fcmError(400, 'INVALID_ARGUMENT', 'Message is too big', 'INVALID_ARGUMENT') },
      message,
    };
  return { message, token: token };
}

const quotaFailure = (subject: string, description: string) => ({
  '@type': QUOTA_FAILURE,
  violations: [{ subject, description }],
});
const rateLimitInfo = (projectId: string) => ({
  '@type': ERROR_INFO,
  reason: 'RATE_LIMIT_EXCEEDED',
  domain: 'googleapis.com',
  metadata: {
    service: 'fcm.googleapis.com',
    quota_metric: 'fcm.googleapis.com/messages',
    consumer: `projects/${projectId}`,
  },
});

/** Every documented error of a send, by the name `doc-<name>-` tokens ask for (docs/providers.md). */
export function documentedFcmError(name: string, projectId: string): FcmAnswer | undefined {
  switch (name) {
    case 'INVALID_ARGUMENT.token':
      return invalidArgument('message.token', 'The registration token is not a valid FCM registration token');
    case 'INVALID_ARGUMENT.payload':
      return invalidArgument(
        'message.android.ttl',
        'Invalid value at \'message.android.ttl\' (type.googleapis.com/google.protobuf.Duration), "-1s"',
      );
    case 'INVALID_ARGUMENT.size':
      return { status: 400, body: fcmError(400, 'INVALID_ARGUMENT', 'Message is too big', 'INVALID_ARGUMENT') };
    case 'UNREGISTERED':
      return { status: 404, body: fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED') };
    case 'SENDER_ID_MISMATCH':
      return { status: 403, body: fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH') };
    case 'QUOTA_EXCEEDED.device':
      return {
        status: 429,
        body: fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.', 'QUOTA_EXCEEDED', [
          quotaFailure('device', 'Device message rate exceeded.'),
        ]),
      };
    case 'QUOTA_EXCEEDED.project':
      return {
        status: 429,
        body: fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.', 'QUOTA_EXCEEDED', [
          quotaFailure(`projects/${projectId}`, 'Project message rate exceeded.'),
        ]),
      };
    case 'QUOTA_EXCEEDED.topic':
      return {
        status: 429,
        body: fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.', 'QUOTA_EXCEEDED', [
          quotaFailure('topic', 'Topic message rate exceeded.'),
        ]),
      };
    case 'RATE_LIMIT_EXCEEDED':
      return {
        status: 429,
        body: fcmError(
          429,
          'RESOURCE_EXHAUSTED',
          "Quota exceeded for quota metric 'Messages' and limit 'Messages per minute' of service 'fcm.googleapis.com'.",
          undefined,
          [rateLimitInfo(projectId)],
        ),
      };
    case 'UNAVAILABLE':
      return {
        status: 503,
        body: fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'),
      };
    case 'INTERNAL':
      return { status: 500, body: fcmError(500, 'INTERNAL', 'Internal error encountered.', 'INTERNAL') };
    case 'THIRD_PARTY_AUTH_ERROR':
      return {
        status: 401,
        body: fcmError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'),
      };
    case 'UNSPECIFIED_ERROR':
      return { status: 500, body: fcmError(500, 'UNKNOWN', 'Unknown error.', 'UNSPECIFIED_ERROR') };
    case 'UNAUTHENTICATED':
      return {
        status: 401,
        body: fcmError(
          401,
          'UNAUTHENTICATED',
          'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        ),
      };
    case 'PERMISSION_DENIED':
      return {
        status: 403,
        body: fcmError(
          403,
          'PERMISSION_DENIED',
          `Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/${projectId}' (or it may not exist).`,
        ),
      };
    case 'NOT_FOUND':
      return { status: 404, body: fcmError(404, 'NOT_FOUND', 'Requested entity was not found.') };
  }
  return undefined;
}
