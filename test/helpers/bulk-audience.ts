import { randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database.js';

/**
 * Users with one active FCM device each, written straight into the tables in chunks of 1,000 (fast,
 * for audiences of thousands): answers the devices' push tokens, `<tokenPrefix><i>x<random>`.
 */
export async function insertFcmAudience(
  db: Db,
  projectId: string,
  n: number,
  options: { tokenPrefix: string; userPrefix?: string; properties?: string; at?: number },
): Promise<string[]> {
  const at = options.at ?? Date.now() - 1000;
  const tokens: string[] = [];
  for (let start = 0; start < n; start += 1000) {
    const users = [];
    const devices = [];
    for (let i = start; i < Math.min(n, start + 1000); i++) {
      const id = randomUUID();
      const token = `${options.tokenPrefix}${i}x${randomBytes(6).toString('hex')}`;
      tokens.push(token);
      users.push({
        id,
        project_id: projectId,
        project_user_id: `${options.userPrefix ?? 'bulk-'}${i}`,
        properties: options.properties ?? '{"plan":"pro"}',
        created_at: at,
        updated_at: at,
      });
      devices.push({
        project_id: projectId,
        device_id: randomUUID(),
        user_id: id,
        platform: 'android' as const,
        provider: 'fcm' as const,
        push_address: token,
        push_keys: null,
        status: 'active' as const,
        disabled_reason: null,
        created_at: at,
        updated_at: at,
      });
    }
    await db.insertInto('users').values(users).execute();
    await db.insertInto('devices').values(devices).execute();
  }
  return tokens;
}
