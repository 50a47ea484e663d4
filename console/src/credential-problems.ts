/**
 * What a provider's refusal of the project's credentials means and what to do about it, for the
 * codes Herald records as credential problems (docs/providers.md has the full tables).
 */
const EXPLAINED: Record<string, string> = {
  OAUTH_INVALID_CLIENT:
    "Google's token server does not know this service account or its key (deleted, disabled, or another token server's account). Create a new key for the account in the Google Cloud console and save it again.",
  OAUTH_INVALID_GRANT:
    "Google's token server refused the signed request: the key was revoked, or this server's clock is off by minutes.",
  INVALID_SERVICE_ACCOUNT_KEY: "The service account's private key cannot sign; save a valid key.",
  SENDER_ID_MISMATCH: 'The device tokens belong to another Firebase project than this service account.',
  THIRD_PARTY_AUTH_ERROR: 'The APNs key or the Web Push settings in the Firebase console are wrong.',
  INVALID_APNS_KEY: 'The APNs auth key (.p8) cannot sign; save a valid key.',
  InvalidProviderToken: 'Apple refused the signed token: the key id, the team id or the key is wrong.',
  ExpiredProviderToken: 'Apple found the signed token too old: check this server\u2019s clock.',
  TopicDisallowed: "The key may not send to this topic (the app's bundle id).",
  BadTopic: "The topic is not the app's bundle id.",
  DeviceTokenNotForTopic: 'The devices belong to another app than the topic (bundle id) saved here.',
  INVALID_VAPID_CREDENTIALS:
    'The VAPID keys cannot sign; save new ones (rotating them requires every browser to subscribe again).',
};

export function explainCredentialProblem(reason: string): string {
  const code = reason.split(':')[0]!.trim();
  if (EXPLAINED[code]) return EXPLAINED[code];
  if (code.startsWith('OAUTH_')) return "Google's token server refused the service account.";
  if (code.startsWith('VAPID_REJECTED_')) return 'The push service refused the VAPID signature (subject or keys).';
  if (code.startsWith('APNS_ENVIRONMENT_MISMATCH'))
    return 'The device tokens belong to the other APNs environment: change the sandbox setting.';
  return 'The provider refused the credentials.';
}
