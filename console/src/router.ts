import { useEffect, useState } from 'preact/hooks';

/** Client routes live under /console/ (the server answers index.html for each of them). */
export const BASE = '/console';

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  const url = to.startsWith(BASE) ? to : `${BASE}${to}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const listener of listeners) listener();
}

/** The current path below /console (e.g. `/users/alice`) and its query, re-rendered on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((n) => n + 1);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  const path = location.pathname.slice(BASE.length).replace(/(?<!\/)\/+$/, '') || '/';
  return { path, query: new URLSearchParams(location.search) };
}

/** Matches `/campaigns/:id` style patterns; answers the decoded parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const part = want[i]!;
    if (part.startsWith(':')) {
      try {
        params[part.slice(1)] = decodeURIComponent(got[i]!);
      } catch {
        return null;
      }
    } else if (part !== got[i]) return null;
  }
  return params;
}
