import type { ProtocolVersion } from './model.js';

/** The outcome of reading `A2A-Version` (rule `a2a-version`): a supported version, or the unsupported value. */
export type VersionChoice = { ok: true; version: ProtocolVersion } | { ok: false; requested: string };

const MAJOR_MINOR = /^(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?$/;

/**
 * Rule `a2a-version`: header `A2A-Version`, else query parameter `A2A-Version`, reduced to Major.Minor.
 * `1.0` is v1; absent, empty or `0.3` is v0.3; anything else is unsupported (-32009).
 */
export function chooseVersion(header: string | string[] | undefined, query: unknown): VersionChoice {
  const raw =
    (typeof header === 'string'
      ? header
      : Array.isArray(header)
        ? header[0]
        : typeof query === 'string'
          ? query
          : undefined
    )?.trim() ?? '';
  if (raw === '') return { ok: true, version: '0.3' };
  const match = MAJOR_MINOR.exec(raw);
  const majorMinor = match ? `${Number(match[1])}.${Number(match[2] ?? 0)}` : raw;
  if (majorMinor === '1.0') return { ok: true, version: '1.0' };
  if (majorMinor === '0.3') return { ok: true, version: '0.3' };
  return { ok: false, requested: raw.slice(0, 32) };
}
