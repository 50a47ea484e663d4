import { createRequire } from 'node:module';
import type * as IoRedis from 'ioredis';
import { bucketResult, type TokenBucketStore } from './token-buckets.js';

/**
 * ioredis is loaded when a Redis store is made, not when Herald starts: it costs a process ~8 MB of
 * RSS, and only deployments with `REDIS_URL` use it. A synchronous load keeps this factory synchronous.
 */
const requireModule = createRequire(import.meta.url);
const loadRedis = (): typeof IoRedis => requireModule('ioredis') as typeof IoRedis;

/**
 * Refill and take in one script, so concurrent instances never race. ARGV: capacity, refill per
 * second, cost, and "now" in epoch ms (empty: the Redis server clock, one time source for every
 * instance). A missing key is a full bucket; the key expires once it would be full again, so idle
 * buckets cost no memory. Tokens travel as strings because Lua numbers returned to Redis are
 * truncated to integers.
 */
const TAKE_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated_at')
local tokens = tonumber(state[1])
local updated = tonumber(state[2])
if tokens == nil or updated == nil then
  tokens = capacity
  updated = now
elseif now > updated then
  tokens = tokens + (now - updated) / 1000 * rate
  updated = now
end
if tokens > capacity then tokens = capacity end
local granted = 0
if tokens >= cost then
  tokens = tokens - cost
  granted = 1
end
local left = string.format('%.17g', tokens)
redis.call('HSET', KEYS[1], 'tokens', left, 'updated_at', string.format('%d', updated))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate * 1000) + 1000)
return {granted, left}
`;

export interface RedisBucketStoreOptions {
  /** Prepended to every bucket key (default `herald:bucket:`). */
  keyPrefix?: string;
  /** Clock in epoch ms; absent uses the Redis server clock. */
  now?: (() => number) | undefined;
  /** A command slower than this fails (default 500 ms), so an outage cannot stall requests. */
  commandTimeoutMs?: number;
  /** Called with the first connection error of each outage. */
  onError?: (error: Error) => void;
}

interface TakeCommand {
  heraldTakeTokens(key: string, capacity: string, rate: string, cost: string, now: string): Promise<[number, string]>;
}

export function createRedisBucketStore(url: string, options: RedisBucketStoreOptions = {}): TokenBucketStore {
  const prefix = options.keyPrefix ?? 'herald:bucket:';
  const { Redis } = loadRedis();
  const redis = new Redis(url, {
    commandTimeout: options.commandTimeoutMs ?? 500,
    connectTimeout: 2000,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let reported = false;
  redis.on('error', (error: Error) => {
    if (!reported) options.onError?.(error);
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  // defineCommand sends EVALSHA and falls back to EVAL when the server does not know the script.
  redis.defineCommand('heraldTakeTokens', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  const command = redis as unknown as TakeCommand;
  return {
    async take(key, spec, cost = 1) {
      const now = options.now === undefined ? '' : String(Math.floor(options.now()));
      const [granted, tokens] = await command.heraldTakeTokens(
        `${prefix}${key}`,
        String(spec.capacity),
        String(spec.refillPerSecond),
        String(cost),
        now,
      );
      return bucketResult(Number(tokens), Number(granted) === 1, spec, cost);
    },
    async close() {
      redis.disconnect();
    },
  };
}
