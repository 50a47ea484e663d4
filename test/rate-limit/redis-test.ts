import { Redis } from 'ioredis';

/** The Redis the suite uses; every test picks a unique key prefix and deletes its keys after. */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

export async function deleteRedisKeys(pattern: string): Promise<void> {
  const admin = new Redis(REDIS_TEST_URL);
  try {
    const keys = await admin.keys(pattern);
    if (keys.length > 0) await admin.del(...keys);
  } finally {
    await admin.quit();
  }
}
