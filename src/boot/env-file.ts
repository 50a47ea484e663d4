/**
 * Reads `.env` from the working directory into `process.env` when the file exists, with Node's own
 * parser. Variables already in the environment win over the file (Node never overrides them), so
 * `PORT=9000 npm start` beats a `PORT` in `.env`. Call before `loadConfig()`.
 */
export function loadDotEnvFile(file = '.env'): boolean {
  try {
    process.loadEnvFile(file);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return false;
    throw error;
  }
}
