/** What this browser registered with Herald, kept in localStorage per project. */
export interface StoredRegistration {
  deviceId: string;
  projectUserId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  /** When Herald last accepted the registration (ms since the epoch). */
  registeredAt: number;
}

const keyOf = (projectId: string) => `herald:web-push:${projectId}`;

function storage(): Storage | undefined {
  try {
    return globalThis.localStorage;
  } catch {
    return undefined; // storage blocked (privacy settings): the helper works, without memory across visits
  }
}

export function loadRegistration(projectId: string): StoredRegistration | undefined {
  const raw = storage()?.getItem(keyOf(projectId));
  if (!raw) return undefined;
  try {
    const value = JSON.parse(raw) as Partial<StoredRegistration>;
    return typeof value.deviceId === 'string' &&
      typeof value.projectUserId === 'string' &&
      typeof value.endpoint === 'string'
      ? (value as StoredRegistration)
      : undefined;
  } catch {
    return undefined;
  }
}

export function saveRegistration(projectId: string, registration: StoredRegistration): void {
  storage()?.setItem(keyOf(projectId), JSON.stringify(registration));
}

export function forgetRegistration(projectId: string): void {
  storage()?.removeItem(keyOf(projectId));
}
