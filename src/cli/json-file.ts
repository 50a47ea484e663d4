import fs from 'node:fs/promises';
import { UsageError } from './cli-args.js';

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The JSON in `path` (`-` reads standard input); an unreadable file or bad JSON is a usage mistake (exit 2). */
export async function readJsonFile(path: string): Promise<unknown> {
  const text =
    path === '-'
      ? await new Promise<string>((resolve, reject) => {
          let data = '';
          process.stdin
            .setEncoding('utf8')
            .on('data', (chunk: string) => (data += chunk))
            .on('end', () => resolve(data))
            .on('error', reject);
        })
      : await fs.readFile(path, 'utf8').catch((error: unknown) => {
          throw new UsageError(`cannot read ${path}: ${message(error)}`);
        });
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${message(error)}`);
  }
}

/** A request body from `path`: a JSON object, else a usage mistake naming what it should be (`what`). */
export async function readJsonObjectFile(path: string, what: string): Promise<Record<string, unknown>> {
  const body = await readJsonFile(path);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new UsageError(`${path} must hold a JSON object (${what})`);
  return body as Record<string, unknown>;
}
