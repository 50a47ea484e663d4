import module from 'node:module';
import { loadDotEnvFile } from './boot/env-file.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startRuntime } from './runtime.js';

/** How long past `SHUTDOWN_TIMEOUT_MS` the process may take to release the leases it still holds. */
const HAND_BACK_LIMIT_MS = 2000;

async function main(): Promise<void> {
  let config;
  try {
    loadDotEnvFile();
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const runtime = await startRuntime(config, { logger });
  // Every module is loaded now: write the compile cache (bin/herald) at once, not only at a clean exit.
  module.flushCompileCache();

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    // Normally the job runner has handed its jobs back well before this (its drain ends 2 s early);
    // if not, the leases are released before exiting, so no job waits out a lease. Bounded: a database
    // that does not answer leaves them to expire.
    const force = setTimeout(() => {
      logger.error('shutdown timed out; handing back job leases and exiting');
      const bound = new Promise((resolve) => setTimeout(resolve, HAND_BACK_LIMIT_MS));
      void Promise.race([runtime.handBackJobs(), bound]).finally(() => process.exit(1));
    }, config.shutdownTimeoutMs);
    force.unref();
    runtime.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `Herald failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
