import module from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadDotEnvFile } from './boot/env-file.js';
import { describeStartupError } from './boot/startup-errors.js';
import { startupWarnings } from './boot/startup-warnings.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, logDestination } from './logger.js';
import { startRuntime } from './runtime.js';

/** How long past `SHUTDOWN_TIMEOUT_MS` the process may take to release the leases it still holds. */
const HAND_BACK_LIMIT_MS = 2000;

/** Exit codes as the command line's: 1 the start failed, 2 the configuration is wrong. */
const EXIT = { failed: 1, usage: 2 } as const;

/**
 * A failed start is one line on stderr naming the setting to change (a port in use, a database that
 * refuses, a data directory this user cannot write), as the command line's errors are; the stack
 * trace only with HERALD_DEBUG=1.
 */
function fail(error: unknown, config: Config | undefined): never {
  let line: string;
  let code: number = EXIT.failed;
  if (error instanceof ConfigError) {
    line = `invalid configuration: ${error.problems.join('; ')}`;
    code = EXIT.usage;
  } else {
    const known = config === undefined ? undefined : describeStartupError(error, config);
    const message = error instanceof Error ? error.message || error.name : String(error);
    line = known ?? `failed to start: ${message.split('\n')[0]} (HERALD_DEBUG=1 prints the stack trace)`;
  }
  process.stderr.write(`herald: ${line}\n`);
  if (process.env.HERALD_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  let config: Config;
  try {
    loadDotEnvFile();
    config = loadConfig();
  } catch (error) {
    fail(error, undefined);
  }
  const logger = createLogger(config.logLevel, await logDestination(config.logFormat));
  // Signals are heard from before the start: the API listens before the runtime has finished starting
  // (the job runner, the metrics port), and a SIGTERM then would otherwise end the process mid-request.
  // One that comes early is acted on as soon as the runtime is up; a start that hangs (a database that
  // does not answer) still ends within SHUTDOWN_TIMEOUT_MS of it.
  const signals: { shutdown?: (signal: string) => void; early?: string } = {};
  const onSignal = (signal: string): void => {
    if (signals.shutdown) return signals.shutdown(signal);
    signals.early ??= signal;
    setTimeout(
      () => fail(new Error(`${signal} while starting; the start did not finish in time`), config),
      config.shutdownTimeoutMs,
    ).unref();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  const runtime = await startRuntime(config, { logger }).catch((error: unknown) => fail(error, config));
  for (const warning of startupWarnings(config)) logger.warn(warning.fields, warning.message);
  // Every module is loaded now: write the compile cache (bin/herald) at once, not only at a clean exit.
  module.flushCompileCache();

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    // Normally the job runner has handed its jobs back well before this (its drain ends 2 s early);
    // if not, the leases are released before exiting, so no job waits out a lease. Bounded: a database
    // that does not answer leaves them to expire.
    const force = setTimeout(() => {
      logger.error('shutdown timed out; handing back job leases and exiting');
      const bound = sleep(HAND_BACK_LIMIT_MS);
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
  signals.shutdown = shutdown;
  if (signals.early !== undefined) shutdown(signals.early);
}

main().catch((error: unknown) => fail(error, undefined));
