import os from 'node:os';
import { resolveDataDir } from './lib/data-dir.js';
import { trimTrailing } from './lib/trim.js';
import { DAY_MS } from './lib/clock.js';
import { parseCorsOrigins, type CorsOrigins } from './settings/cors-origins.js';
import { parseRateLimitDefaults, type RateLimits } from './settings/rate-limit-settings.js';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, type RetentionSettings } from './settings/retention-settings.js';
import { vapidSubjectProblem } from './settings/vapid-subject.js';
import { defaultPoolSizes } from './settings/connection-budget.js';
import { DEFAULT_QUOTAS_PER_MINUTE } from './settings/provider-quotas.js';

/** Which parts of Herald this process runs (rule `instances`). */
export type HeraldRole = 'api' | 'worker' | 'all';

/** What DATABASE_URL connects to: PostgreSQL itself (`none`) or a pooler in transaction mode. */
export type DatabasePooler = 'none' | 'transaction';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** `undefined` selects the embedded SQLite file `${dataDir}/herald.sqlite`. */
  readonly databaseUrl: string | undefined;
  /** The primary's query pool of this process; default by role (`connection-budget.ts`). */
  readonly databasePoolSize: number;
  /** The replica's pool (DATABASE_READ_URL); default by role, 0 for a worker (it reads no replica). */
  readonly databaseReadPoolSize: number;
  /** PostgreSQL `statement_timeout` of the API's lag-tolerant reads (lists, analytics), and of dry runs; 0: none. */
  readonly databaseReadTimeoutMs: number;
  readonly databaseDryRunTimeoutMs: number;
  /** `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer), so no session state and no LISTEN through it. */
  readonly databasePooler: DatabasePooler;
  /** A direct PostgreSQL connection for LISTEN (job wake-ups, cross-instance A2A events) when DATABASE_URL is a pooler. */
  readonly databaseListenUrl: string | undefined;
  /** A read-only PostgreSQL connection (a replica) for audience counts, dry runs and lists. */
  readonly databaseReadUrl: string | undefined;
  readonly logLevel: string;
  /** `json` (one object a line, for collectors) or `pretty` (readable lines, for development). */
  readonly logFormat: 'json' | 'pretty';
  readonly role: HeraldRole;
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /** BEHIND_TLS_PROXY: plain HTTP on a public interface is intended (a TLS-terminating proxy is in front). */
  readonly behindTlsProxy: boolean;
  readonly publicUrl: string | undefined;
  /** Origins whose pages may call the client-SDK routes (public key) from a browser, from CORS_ORIGINS. */
  readonly corsOrigins: CorsOrigins;
  readonly redisUrl: string | undefined;
  /** Per-class defaults of the per-project rate limits (rule `rate-limits`), from `RATE_LIMIT_DEFAULTS`. */
  readonly rateLimitDefaults: RateLimits;
  readonly requestTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  readonly bodyLimitBytes: number;
  readonly secretKey: string | undefined;
  readonly jobConcurrency: number;
  readonly jobPollIntervalMs: number;
  readonly jobLeaseMs: number;
  /** Template render worker threads (default: the machine's available parallelism), and one recipient's render budgets (time, worker heap, output). */
  readonly templateWorkers: number;
  readonly templateRenderTimeoutMs: number;
  readonly templateMemoryLimitMb: number;
  readonly templateOutputLimitBytes: number;
  /** Time-budget overruns after which the rest of a trigger's recipients are skipped unrendered. */
  readonly templateTimeoutsPerTrigger: number;
  readonly fcmApiUrl: string;
  readonly fcmQuotaPerMinute: number;
  readonly apnsApiUrl: string;
  readonly apnsSandboxApiUrl: string;
  readonly apnsQuotaPerMinute: number;
  readonly pushTimeoutMs: number;
  /** Long-lived HTTP/2 connections per provider origin (and APNs team and key), and streams in flight on each. */
  readonly pushHttp2Sessions: number;
  readonly pushHttp2Streams: number;
  /** OUTBOUND_ALLOW_PRIVATE_NETWORKS (or its alias WEBHOOK_ALLOW_PRIVATE_NETWORKS): tenant URLs may reach private addresses (local development only). */
  readonly outboundAllowPrivateNetworks: boolean;
  /** Hosts (`host` or `host:port`) an FCM service account's token_uri may name besides Google's, from FCM_TOKEN_URI_HOSTS. */
  readonly fcmTokenUriHosts: readonly string[];
  /** The worker role's health and metrics port (`herald worker`); 0 picks a free port. */
  readonly workerMetricsPort: number;
  /** `METRICS_TOKEN`: `/metrics` answers only `Authorization: Bearer <token>` (every role, every port). */
  readonly metricsToken: string | undefined;
  /** `METRICS_PORT`: the API role serves `/metrics` on this port of its own, not on the API port; 0 picks a free port. */
  readonly metricsPort: number | undefined;
  /** Operator default for the VAPID `sub` contact (`mailto:` or `https:`), used when a project gives none. */
  readonly vapidSubject: string | undefined;
  /** How long a campaign keeps retrying deliveries that failed for a passing reason before recording them FAILED. */
  readonly campaignRetryWindowMs: number;
  /** RETENTION_*: how long deliveries, events and finished A2A tasks are kept, and how the job deletes them. */
  readonly retention: RetentionSettings;
  /** Live trigger progress streams (SSE) open at once per project, and how often each reads the trigger. */
  readonly triggerStreamsPerProject: number;
  readonly triggerStreamPollMs: number;
  /** Recurring schedules: the shortest time a cron may leave between two fires, and how late an occurrence may still fire (rule `recurring-schedules`). */
  readonly scheduleMinIntervalMs: number;
  readonly scheduleLateLimitMs: number;
}

/** `VAPID_SUBJECT`: a contact push services can reach (the same rule as a project's own subject). */
function vapidSubject(value: string | undefined, problems: string[]): string | undefined {
  if (value === undefined) return undefined;
  const problem = vapidSubjectProblem(value);
  if (problem) problems.push(`VAPID_SUBJECT: ${problem}`);
  return value;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

/**
 * Parses the environment once at boot. Every problem is collected and reported together so an
 * operator fixes them in one pass. Nothing else in Herald reads `process.env`.
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = str(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes'].includes(raw)) return true;
    if (['false', '0', 'no'].includes(raw)) return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return fallback;
  };
  const url = (name: string, fallback: string | undefined, protocols: string[]): string | undefined => {
    const raw = str(name) ?? fallback;
    if (raw === undefined) return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol))
        problems.push(`${name} must use ${protocols.join(' or ')}, got "${raw}"`);
    } catch {
      problems.push(`${name} must be a URL, got "${raw}"`);
    }
    return trimTrailing(raw, '/');
  };

  const hostList = (name: string): string[] => {
    const hosts = (str(name) ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== '');
    for (const host of hosts)
      if (!/^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/.test(host))
        problems.push(`${name} must list host or host:port names separated by commas, got "${host}"`);
    return hosts;
  };

  const role = str('HERALD_ROLE') ?? 'all';
  if (role !== 'api' && role !== 'worker' && role !== 'all')
    problems.push(`HERALD_ROLE must be api, worker or all, got "${role}"`);
  const tlsCertFile = str('TLS_CERT_FILE');
  const tlsKeyFile = str('TLS_KEY_FILE');
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined))
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  const secretKey = str('HERALD_SECRET_KEY');
  if (secretKey !== undefined && !/^[0-9a-fA-F]{64}$/.test(secretKey))
    problems.push('HERALD_SECRET_KEY must be 64 hex characters (32 bytes)');

  const metricsToken = str('METRICS_TOKEN');
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,256}$/.test(metricsToken))
    problems.push(
      'METRICS_TOKEN must be 16 to 256 printable characters without spaces (openssl rand -hex 32 makes one)',
    );
  const metricsPort = str('METRICS_PORT') === undefined ? undefined : int('METRICS_PORT', 0, 0, 65535);

  const databaseUrl = url('DATABASE_URL', undefined, ['postgres:', 'postgresql:']);
  const databasePooler = str('DATABASE_POOLER') ?? 'none';
  if (databasePooler !== 'none' && databasePooler !== 'transaction')
    problems.push(`DATABASE_POOLER must be none or transaction, got "${databasePooler}"`);
  const databaseListenUrl = url('DATABASE_LISTEN_URL', undefined, ['postgres:', 'postgresql:']);
  const databaseReadUrl = url('DATABASE_READ_URL', undefined, ['postgres:', 'postgresql:']);
  // The embedded SQLite database has no pooler, no LISTEN and no replicas: a setting that would be
  // silently ignored is refused, so an operator who meant PostgreSQL finds out at startup.
  if (databaseUrl === undefined)
    for (const name of ['DATABASE_POOLER', 'DATABASE_LISTEN_URL', 'DATABASE_READ_URL'])
      if (str(name) !== undefined && str(name) !== 'none')
        problems.push(`${name} applies to PostgreSQL only: set DATABASE_URL too, or unset ${name} for SQLite`);

  const jobConcurrency = int('JOB_CONCURRENCY', 4, 1, 256);
  const requestTimeoutMs = int('REQUEST_TIMEOUT_MS', 100_000, 1, 3_600_000);
  const roleName: HeraldRole = role === 'api' || role === 'worker' ? role : 'all';
  // A statement timeout past the request timeout would never be seen (the request answers 503
  // first): the defaults stay below it, and a setting at or above it is refused.
  const belowRequest = (fallback: number): number => Math.min(fallback, Math.floor(requestTimeoutMs * 0.9));
  const statementTimeout = (name: string, value: number): number => {
    if (value >= requestTimeoutMs)
      problems.push(`${name} must be below REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${value}`);
    return value;
  };
  const defaultPools = defaultPoolSizes(roleName, jobConcurrency);

  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host: str('HOST') ?? '0.0.0.0',
    dataDir: resolveDataDir(str('DATA_DIR')),
    databaseUrl,
    databasePoolSize: int('DATABASE_POOL_SIZE', defaultPools.pool, 1, 1000),
    databaseReadPoolSize: int('DATABASE_READ_POOL_SIZE', defaultPools.readPool, 0, 1000),
    databaseReadTimeoutMs: statementTimeout(
      'DATABASE_READ_TIMEOUT_MS',
      int('DATABASE_READ_TIMEOUT_MS', belowRequest(30_000), 0, 3_600_000),
    ),
    databaseDryRunTimeoutMs: statementTimeout(
      'DATABASE_DRY_RUN_TIMEOUT_MS',
      int('DATABASE_DRY_RUN_TIMEOUT_MS', belowRequest(90_000), 0, 3_600_000),
    ),
    databasePooler: databasePooler === 'transaction' ? 'transaction' : 'none',
    databaseListenUrl,
    databaseReadUrl,
    logLevel: str('LOG_LEVEL') ?? 'info',
    logFormat: str('LOG_FORMAT') === 'pretty' ? 'pretty' : 'json',
    role: roleName,
    tlsCertFile,
    tlsKeyFile,
    behindTlsProxy: bool('BEHIND_TLS_PROXY', false),
    publicUrl: url('PUBLIC_URL', undefined, ['http:', 'https:']),
    corsOrigins: parseCorsOrigins(str('CORS_ORIGINS'), problems),
    redisUrl: url('REDIS_URL', undefined, ['redis:', 'rediss:']),
    rateLimitDefaults: parseRateLimitDefaults(str('RATE_LIMIT_DEFAULTS'), problems),
    requestTimeoutMs,
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 30_000, 0, 3_600_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    secretKey,
    jobConcurrency,
    jobPollIntervalMs: int('JOB_POLL_INTERVAL_MS', 1000, 10, 60_000),
    jobLeaseMs: int('JOB_LEASE_MS', 60_000, 1000, 3_600_000),
    templateWorkers: int('TEMPLATE_WORKERS', Math.min(64, os.availableParallelism()), 1, 64),
    templateRenderTimeoutMs: int('TEMPLATE_RENDER_TIMEOUT_MS', 200, 10, 10_000),
    templateMemoryLimitMb: int('TEMPLATE_MEMORY_LIMIT_MB', 64, 16, 1024),
    templateOutputLimitBytes: int('TEMPLATE_OUTPUT_LIMIT_BYTES', 65_536, 1024, 16 * 1024 * 1024),
    templateTimeoutsPerTrigger: int('TEMPLATE_TIMEOUTS_PER_TRIGGER', 10, 1, 1_000_000),
    fcmApiUrl: url('FCM_API_URL', 'https://fcm.googleapis.com', ['https:', 'http:']) ?? '',
    fcmQuotaPerMinute: int('FCM_QUOTA_PER_MINUTE', DEFAULT_QUOTAS_PER_MINUTE.fcm, 1, 100_000_000),
    apnsApiUrl: url('APNS_API_URL', 'https://api.push.apple.com', ['https:', 'http:']) ?? '',
    apnsSandboxApiUrl: url('APNS_SANDBOX_API_URL', 'https://api.sandbox.push.apple.com', ['https:', 'http:']) ?? '',
    apnsQuotaPerMinute: int('APNS_QUOTA_PER_MINUTE', DEFAULT_QUOTAS_PER_MINUTE.apns, 1, 100_000_000),
    pushTimeoutMs: int('PUSH_TIMEOUT_MS', 10_000, 100, 100_000),
    pushHttp2Sessions: int('PUSH_HTTP2_SESSIONS', 4, 1, 64),
    pushHttp2Streams: int('PUSH_HTTP2_STREAMS', 100, 1, 1000),
    outboundAllowPrivateNetworks: bool(
      'OUTBOUND_ALLOW_PRIVATE_NETWORKS',
      bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    ),
    fcmTokenUriHosts: hostList('FCM_TOKEN_URI_HOSTS'),
    workerMetricsPort: int('WORKER_METRICS_PORT', 9464, 0, 65535),
    metricsToken,
    metricsPort,
    vapidSubject: vapidSubject(str('VAPID_SUBJECT'), problems),
    campaignRetryWindowMs: int('CAMPAIGN_RETRY_WINDOW_MS', 3_600_000, 0, 7 * 24 * 3_600_000),
    retention: {
      days: {
        deliveries: int('RETENTION_DELIVERIES_DAYS', DEFAULT_RETENTION_DAYS.deliveries, 0, MAX_RETENTION_DAYS),
        events: int('RETENTION_EVENTS_DAYS', DEFAULT_RETENTION_DAYS.events, 0, MAX_RETENTION_DAYS),
        tasks: int('RETENTION_TASKS_DAYS', DEFAULT_RETENTION_DAYS.tasks, 0, MAX_RETENTION_DAYS),
      },
      chunkRows: int('RETENTION_CHUNK_ROWS', 5000, 1, 100_000),
      intervalMs: int('RETENTION_INTERVAL_MS', 3_600_000, 1000, DAY_MS),
      partitionsAheadDays: int('RETENTION_PARTITIONS_AHEAD_DAYS', 3, 1, 60),
    },
    triggerStreamsPerProject: int('TRIGGER_STREAMS_PER_PROJECT', 10, 1, 10_000),
    triggerStreamPollMs: int('TRIGGER_STREAM_POLL_MS', 1000, 50, 60_000),
    scheduleMinIntervalMs: int('SCHEDULE_MIN_INTERVAL_MS', 15 * 60_000, 60_000, DAY_MS),
    scheduleLateLimitMs: int('SCHEDULE_LATE_LIMIT_MS', 3_600_000, 60_000, 7 * DAY_MS),
  };
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port)
    problems.push(`METRICS_PORT must differ from PORT (both are ${config.port})`);
  const logFormat = str('LOG_FORMAT');
  if (logFormat !== undefined && logFormat !== 'json' && logFormat !== 'pretty')
    problems.push(`LOG_FORMAT must be json or pretty, got "${logFormat}"`);
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
