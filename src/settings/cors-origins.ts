/** `CORS_ORIGINS`: `*` (any origin), a list of exact origins, or none (no cross-origin calls at all). */
export type CorsOrigins = '*' | readonly string[];

/** Parses `CORS_ORIGINS`: unset or `*` is any origin; `none` is off; else comma-separated `scheme://host[:port]`. */
export function parseCorsOrigins(raw: string | undefined, problems: string[]): CorsOrigins {
  const value = raw?.trim();
  if (value === undefined || value === '*') return '*';
  if (value === '' || value.toLowerCase() === 'none') return [];
  const origins = value.split(',').map((origin) => origin.trim());
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin)
      problems.push(
        `CORS_ORIGINS must be *, none, or origins like https://app.example.com separated by commas, got "${origin}"`,
      );
  }
  return origins;
}
