import fs from 'node:fs';
import { once } from 'node:events';
import readline from 'node:readline';
import type { Writable } from 'node:stream';
import type { Config } from '../config.js';
import { AppError, notFound } from '../errors.js';
import type { Herald } from '../herald.js';
import { preferencesImport } from '../preferences/preferences-import.js';
import { preferencesOfUsers } from '../preferences/preferences-export.js';
import { findProject } from '../projects/projects.service.js';
import { createNoticeOutbox } from '../webhooks/notice-outbox.service.js';
import {
  importUsers,
  IMPORT_TRANSACTION_ROWS,
  parseImportLine,
  type ImportLine,
} from '../users/users-import.service.js';
import { listUsers, userToWire, validateUserFilter } from '../users/users-read.service.js';
import { checkedOption, optionalFlag, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

const EXPORT_PAGE = 1000;

async function assertProject(h: Herald, projectId: string): Promise<void> {
  if (!(await findProject(h.db, projectId))) throw notFound('PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
}

/** Writes a line, waiting for the stream to drain when its buffer is full (bounded memory at any size). */
async function writeLine(out: Writable, value: unknown): Promise<void> {
  if (!out.write(`${JSON.stringify(value)}\n`)) await once(out, 'drain');
}

function openInput(path: string | undefined): NodeJS.ReadableStream {
  if (path === undefined || path === '-') return process.stdin;
  if (!fs.existsSync(path)) throw new UsageError(`${path} does not exist`);
  return fs.createReadStream(path);
}

/**
 * `users import`: NDJSON in, streamed in transactions of `IMPORT_TRANSACTION_ROWS` lines through the same
 * service as `POST /api/v1/users:import`, so memory stays flat at any input size. Stdout gets one
 * NDJSON result per failed line, then the totals `{"created","updated","failed"}`.
 */
async function runImport(path: string | undefined, projectId: string, config: Config) {
  const input = openInput(path);
  const totals = { created: 0, updated: 0, failed: 0 };
  await withHerald(config, async (h) => {
    await assertProject(h, projectId);
    const notices = createNoticeOutbox({ clock: h.clock });
    const deps = { db: h.db, writes: h.writes, clock: h.clock, preferences: preferencesImport({ notices }) };
    let lines: ImportLine[] = [];
    const flush = async () => {
      const summary = await importUsers(deps, projectId, lines);
      lines = [];
      totals.created += summary.created;
      totals.updated += summary.updated;
      totals.failed += summary.failed;
      for (const r of summary.results) if (r.status === 'error') await writeLine(process.stdout, r);
    };
    let lineNumber = 0;
    for await (const raw of readline.createInterface({ input, crlfDelay: Infinity })) {
      lineNumber++;
      const text = raw.trim();
      if (text === '') continue;
      lines.push(parseImportLine(text, lineNumber));
      if (lines.length >= IMPORT_TRANSACTION_ROWS) await flush();
    }
    if (lines.length > 0) await flush();
  });
  await writeLine(process.stdout, totals);
  if (totals.failed > 0)
    throw new AppError(
      'invalid',
      'IMPORT_LINES_FAILED',
      `${totals.failed} line(s) failed; their results are on stdout`,
    );
}

/**
 * `users export`: every user (or those matching `--filter`) as NDJSON, page by page in id order, each
 * with their preferences as `GET /api/v1/users/{id}/preferences` answers them (one query per page).
 */
async function runExport(
  projectId: string,
  query: { filter?: string | undefined; prefix?: string | undefined },
  config: Config,
): Promise<void> {
  await withHerald(config, async (h) => {
    await assertProject(h, projectId);
    const preferencesOf = await preferencesOfUsers(h.db, projectId);
    let cursor: string | undefined;
    do {
      const page = await listUsers(h.db, h.clock, projectId, { ...query, limit: EXPORT_PAGE, cursor });
      const preferences = await preferencesOf(page.users);
      for (const [i, user] of page.users.entries())
        await writeLine(process.stdout, { ...userToWire(user), preferences: preferences[i] });
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  });
}

/** Moving users in and out of a project, in NDJSON lines `{ project_user_id, properties, ... }`. */
export const usersCommands: Record<string, CliCommand> = {
  'users import': {
    usage: 'users import --project P [--file F]',
    description:
      "Creates users or merges their properties, from NDJSON lines { project_user_id, properties, preferences? } (an export imports back as is; preferences as GET /api/v1/users/{id}/preferences shows them, merged into the user's choices; an unknown topic key fails the line), in bounded memory at any size. --file - or no --file reads stdin. Stdout: a result line per failed input line, then the totals; exit 1 when a line failed.",
    options: { file: 'the NDJSON file, one user a line (- or no --file: stdin)' },
    example: {
      file: 'users.ndjson',
      content: [
        '{"project_user_id":"alice","properties":{"plan":"pro","age":31}}',
        '{"project_user_id":"bob","properties":{"plan":"free"},"created_at":"2025-01-31T09:00:00.000Z"}',
        '{"project_user_id":"cy","properties":{},"preferences":{"campaign_pushes":"unsubscribed","topics":{}}}',
      ].join('\n'),
    },
    run: (args, config) => runImport(optionalFlag(args, 'file'), requireFlag(args, 'project'), config),
  },
  'users export': {
    usage: "users export --project P [--filter '<condition JSON>'] [--prefix ID]",
    description:
      'Writes the users as NDJSON { project_user_id, properties, created_at, updated_at, preferences } (preferences as GET /api/v1/users/{id}/preferences answers them), in project_user_id order, in bounded memory. --filter takes a condition in the campaign segment language.',
    options: {
      filter: 'only users matching this condition (the campaign segment language, as JSON)',
      prefix: 'only users whose project_user_id starts with this',
    },
    run: (args, config) => {
      const filter = optionalFlag(args, 'filter');
      checkedOption('filter', filter, (text) => validateUserFilter(text));
      return runExport(requireFlag(args, 'project'), { filter, prefix: optionalFlag(args, 'prefix') }, config);
    },
  },
};
