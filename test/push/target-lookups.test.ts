import { describe, expect, it } from 'vitest';
import { inListLengthsWhile } from '../helpers/statements.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
} from './push-helpers.js';

/*
 * A send looks its targets up with IN lists padded to a power of two (src/db/statement-shapes.ts), so
 * requests of different sizes share statement texts: SQLite caches one statement per text, and
 * PostgreSQL names a bounded number of texts per process (src/db/named-statements.ts).
 */

const fakes = useFakeProviders();

const item = (target: object) => ({ target, title: 'Hi', body: 'There' });

describe.each(TEST_DIALECTS)('target lookups of a send on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  const send = (c: TestContext, targets: object[]) => sendToDevices(c, c.secret, targets.map(item));

  it('pads the device id list to a power of two, with each target answered once', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const ids: string[] = [];
    const tokens = Array.from({ length: 5 }, () => fcmToken());
    for (const [i, token] of tokens.entries())
      ids.push(await registerDevice(ctx(), ctx().secret, `pad-${i}`, { fcm_token: token }));

    const results: Record<number, string[]> = {};
    const lengths = await inListLengthsWhile(async () => {
      for (const count of [3, 4, 5]) {
        const got = await send(
          ctx(),
          ids.slice(0, count).map((device_id) => ({ device_id })),
        );
        results[count] = got.map((r) => String(r.status));
      }
    }, '"devices"."device_id"');
    expect(lengths).toEqual([4, 4, 8]);
    expect(results[3]).toEqual([S('ACCEPTED'), S('ACCEPTED'), S('ACCEPTED')]);
    expect(results[5]).toHaveLength(5);
    expect(new Set(results[5])).toEqual(new Set([S('ACCEPTED')]));
    // 3 + 4 + 5 messages: padding repeats an id in the lookup, never a send.
    expect(fakes().fcm.recorder.items.filter((r) => tokens.includes(r.token))).toHaveLength(12);
  });

  it("pads a send's user lists too, and still tells a user without devices from an unknown one", async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const withDevice = await registerDevice(ctx(), ctx().secret, 'pad-user-a', { fcm_token: fcmToken() });
    expect(withDevice).toBeTruthy();
    const noDevice = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: 'pad-user-b', properties: {} },
    });
    expect(noDevice.statusCode, noDevice.body).toBe(200);

    let statuses: string[] = [];
    const lengths = await inListLengthsWhile(async () => {
      const got = await send(ctx(), [
        { project_user_id: 'pad-user-a' },
        { project_user_id: 'pad-user-b' },
        { project_user_id: 'pad-user-unknown' },
      ]);
      statuses = got.map((r) => `${r.status} ${r.additional_params.failure_reason}`);
    }, '"project_user_id"');
    // The devices of the three users, then which of the two without devices exist.
    expect(lengths).toEqual([4, 2]);
    expect(statuses).toEqual([
      `${S('ACCEPTED')} `,
      `${S('NO_DEVICE')} NO_ACTIVE_DEVICE`,
      `${S('NO_DEVICE')} USER_NOT_FOUND`,
    ]);
  });
});
