/** JSON crosses the drivers differently: text on SQLite, parsed values from PostgreSQL `jsonb`. */
export function readJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function writeJson(value: unknown): string {
  return JSON.stringify(value);
}
