import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  apnsToken,
  configureProviders,
  put,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
} from './push-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('APNs connections and environments on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  const credentials = async () =>
    (await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: ctx().secret })).json();

  it('sends for two teams at once over separate connections, one team per connection, one token per key', async () => {
    const other = await ctx().newProject('second-team');
    const mine = await configureProviders(ctx(), ctx().secret, fakes());
    const theirs = await configureProviders(ctx(), other.secret, fakes());
    expect(mine.apnsKey.teamId).not.toBe(theirs.apnsKey.teamId);
    const tokens = {
      mine: Array.from({ length: 10 }, () => apnsToken()),
      theirs: Array.from({ length: 10 }, () => apnsToken()),
    };
    const ids = {
      mine: await Promise.all(tokens.mine.map((t) => registerDevice(ctx(), ctx().secret, 'team-a', { apns_token: t }))),
      theirs: await Promise.all(
        tokens.theirs.map((t) => registerDevice(ctx(), other.secret, 'team-b', { apns_token: t })),
      ),
    };
    const connectionsBefore = fakes().apns.teamsPerConnection.length;
    const issued = ctx().herald.push.apnsAuth.issued;
    const [a, b] = await Promise.all([
      sendToDevices(
        ctx(),
        ctx().secret,
        ids.mine.map((device_id) => ({ target: { device_id }, title: 'a' })),
      ),
      sendToDevices(
        ctx(),
        other.secret,
        ids.theirs.map((device_id) => ({ target: { device_id }, title: 'b' })),
      ),
    ]);
    expect([...a, ...b].map((r) => r.status)).toEqual(Array(20).fill(S('ACCEPTED')));

    // The stand-in refuses a second team on a connection (as Apple does); each new connection carried one team.
    const opened = fakes().apns.teamsPerConnection.slice(connectionsBefore);
    expect(opened.every((teams) => teams.size === 1)).toBe(true);
    expect(new Set(opened.flatMap((teams) => [...teams]))).toEqual(
      new Set([mine.apnsKey.teamId, theirs.apnsKey.teamId]),
    );
    const keys = [...ctx().herald.push.pool.connectionsByKey().keys()];
    expect(keys.filter((k) => k.includes(mine.apnsKey.teamId))).toHaveLength(1);
    expect(keys.filter((k) => k.includes(theirs.apnsKey.teamId))).toHaveLength(1);
    expect(ctx().herald.push.apnsAuth.issued - issued).toBe(2);

    // A third project saving the first project's key shares its token and connection.
    const third = await ctx().newProject('same-key');
    const body = {
      key: mine.apnsKey.privateKey,
      key_id: mine.apnsKey.keyId,
      team_id: mine.apnsKey.teamId,
      topic: mine.topic,
    };
    expect((await put(ctx(), third.secret, '/api/v1/push-credentials/apns', body)).statusCode).toBe(200);
    const shared = await registerDevice(ctx(), third.secret, 'team-a-too', { apns_token: apnsToken() });
    const [c] = await sendToDevices(ctx(), third.secret, [{ target: { device_id: shared }, title: 'c' }]);
    expect(c!.status).toBe(S('ACCEPTED'));
    expect(ctx().herald.push.apnsAuth.issued - issued).toBe(2);
    expect(fakes().apns.teamsPerConnection.length - connectionsBefore).toBe(opened.length);
  });

  it("delivers a development token through the sandbox, records the project's wrong environment and keeps the device", async () => {
    const { apnsKey, topic } = await configureProviders(ctx(), ctx().secret, fakes());
    const devToken = apnsToken('sandbox-');
    const bad = apnsToken('invalid-');
    const [devId, badId] = [
      await registerDevice(ctx(), ctx().secret, 'env', { apns_token: devToken }),
      await registerDevice(ctx(), ctx().secret, 'env', { apns_token: bad }),
    ];
    const [dev, invalid] = await sendToDevices(ctx(), ctx().secret, [
      { target: { device_id: devId }, title: 'x' },
      { target: { device_id: badId }, title: 'x' },
    ]);
    expect(dev!.status).toBe(S('ACCEPTED'));
    const seen = fakes()
      .apns.recorder.items.filter((r) => r.token === devToken)
      .map((r) => [r.headers[':environment'], r.status]);
    expect(seen).toEqual([
      ['production', 400],
      ['sandbox', 200],
    ]);
    expect((await credentials()).apns.problem).toMatchObject({
      reason: expect.stringMatching(/^APNS_ENVIRONMENT_MISMATCH/),
      deliveries: 1,
    });
    // A token bad in both environments is the device's fault.
    expect([invalid!.status, invalid!.additional_params.failure_reason]).toEqual([
      S('TOKEN_INVALID'),
      'BadDeviceToken',
    ]);
    const devices = (
      await ctx().inject({ method: 'GET', url: '/api/v1/users/env/devices', headers: ctx().secret })
    ).json<{ devices: Array<{ device_id: string; status: string }> }>();
    expect(devices.devices.map((d) => [d.device_id, d.status]).sort()).toEqual(
      [
        [devId, 'active'],
        [badId, 'disabled'],
      ].sort(),
    );

    // Fixed settings: straight to the sandbox, and saving them cleared the problem.
    expect(
      (
        await put(ctx(), ctx().secret, '/api/v1/push-credentials/apns', {
          key: apnsKey.privateKey,
          key_id: apnsKey.keyId,
          team_id: apnsKey.teamId,
          topic,
          sandbox: true,
        })
      ).statusCode,
    ).toBe(200);
    expect((await credentials()).apns.problem).toBeNull();
    fakes().apns.recorder.clear();
    const [again] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: devId }, title: 'x' }]);
    expect(again!.status).toBe(S('ACCEPTED'));
    expect(
      fakes()
        .apns.recorder.items.filter((r) => r.token === devToken)
        .map((r) => r.headers[':environment']),
    ).toEqual(['sandbox']);
  });
});
