/**
 * The signed-in project: its id and secret key, kept in this tab's session storage only (never a
 * cookie, never a URL), so closing the tab signs out and other tabs or sites never see the key.
 */
export interface Session {
  projectId: string;
  secretKey: string;
}

const KEY = 'herald-console-session';

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const parsed = JSON.parse(raw) as Partial<Session>;
    return typeof parsed.projectId === 'string' && typeof parsed.secretKey === 'string'
      ? { projectId: parsed.projectId, secretKey: parsed.secretKey }
      : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}
