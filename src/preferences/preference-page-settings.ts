import type { ColumnType } from 'kysely';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { checkOutboundUrl, OutboundUrlRefused, type OutboundPolicy } from '../lib/outbound-url-policy.js';

declare module '../db/database.js' {
  interface ProjectsTable {
    /** The customer's own preference page (migration 0038), or null for Herald's. */
    preference_page_url: ColumnType<string | null, string | null | undefined, string | null>;
  }
}

export const MAX_PAGE_URL_LENGTH = 2048;

/** The project's preference page base URL (rule `preference-links`), or null when links open Herald's own page. */
export async function preferencePageUrl(db: Db, projectId: string): Promise<string | null> {
  const row = await db
    .selectFrom('projects')
    .select('preference_page_url')
    .where('id', '=', projectId)
    .executeTakeFirst();
  if (!row) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return row.preference_page_url;
}

/**
 * Sets (a URL) or removes (null) the page links point to. Herald never fetches it, but it is a tenant
 * URL handed to people, so it passes the outbound-URL policy's checks of form: an absolute https URL
 * without credentials and not a loopback or private address literal. A `token` query parameter is
 * Herald's to set, so the URL may not carry one.
 */
export async function setPreferencePageUrl(
  db: Db,
  policy: OutboundPolicy,
  projectId: string,
  input: unknown,
): Promise<string | null> {
  let url: string | null = null;
  if (input !== null) {
    if (typeof input !== 'string' || input.length > MAX_PAGE_URL_LENGTH)
      throw invalidUrl(`url must be an https URL of at most ${MAX_PAGE_URL_LENGTH} characters, or null`);
    let parsed: URL;
    try {
      parsed = checkOutboundUrl(input, policy);
    } catch (error) {
      if (error instanceof OutboundUrlRefused) throw invalidUrl(error.reason);
      throw error;
    }
    if (parsed.searchParams.has('token')) throw invalidUrl('url must not carry a token parameter: Herald adds it');
    url = parsed.href;
  }
  await preferencePageUrl(db, projectId);
  await db.updateTable('projects').set({ preference_page_url: url }).where('id', '=', projectId).execute();
  return url;
}

const invalidUrl = (message: string) => new AppError('invalid', 'INVALID_PREFERENCE_PAGE_URL', message);

/** The link to the customer's page: its URL with the signed token as the `token` query parameter. */
export function customerPageLink(base: string, token: string): string {
  const url = new URL(base);
  url.searchParams.set('token', token);
  return url.href;
}
