import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  pushOverrides,
  registerDevice,
  sendToDevices,
  useFakeProviders,
  type DeviceAddress,
} from './push-helpers.js';

/*
 * One delivery per row of the tables in docs/providers.md, through the HTTP API against the
 * stand-ins (which answer `doc-<name>-` addresses with that documented error): status,
 * failure_reason, attempts, what happened to the device and whether the credentials got a problem.
 */

const fakes = useFakeProviders();
const MAX_ATTEMPTS = 3;

type Provider = 'fcm' | 'apns' | 'webpush';
interface Row {
  provider: Provider;
  name: string;
  status: string;
  reason: string;
  retry: string;
  token: string;
  problem: boolean;
}

function documentedRows(): Row[] {
  const text = fs.readFileSync(new URL('../../docs/providers.md', import.meta.url), 'utf8');
  const rows: Row[] = [];
  let provider: Provider | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('## '))
      provider = line.startsWith('## FCM')
        ? 'fcm'
        : line.startsWith('## APNs')
          ? 'apns'
          : line.startsWith('## Web Push')
            ? 'webpush'
            : undefined;
    if (!provider || !line.startsWith('| `')) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim().replace(/`/g, ''));
    rows.push({
      provider,
      name: cells[0]!,
      status: `DELIVERY_RESULT_STATUS${cells[3]!}`,
      reason: cells[4]!,
      retry: cells[5]!,
      token: cells[6]!,
      problem: cells[7] === 'yes',
    });
  }
  return rows;
}

const ROWS = documentedRows();

describe('docs/providers.md', () => {
  it('lists every documented error of each provider', () => {
    const names = (p: Provider) => ROWS.filter((r) => r.provider === p).map((r) => r.name);
    expect(names('fcm')).toEqual(
      expect.arrayContaining([
        'UNREGISTERED',
        'SENDER_ID_MISMATCH',
        'QUOTA_EXCEEDED.device',
        'QUOTA_EXCEEDED.project',
        'UNAVAILABLE',
        'INTERNAL',
        'THIRD_PARTY_AUTH_ERROR',
        'UNSPECIFIED_ERROR',
      ]),
    );
    expect(names('apns')).toHaveLength(33);
    expect(names('webpush')).toEqual(expect.arrayContaining(['404', '410', '413', '429']));
  });
});

describe.each(TEST_DIALECTS)('every documented provider error on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes, {
      runtime: { retry: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 20, maxDelayMs: 100, quotaExceededDelayMs: 50 } },
    }),
  });

  function address(row: Row, n: number): DeviceAddress {
    const prefix = `doc-${row.name}-${n}x`;
    if (row.provider === 'fcm') return { fcm_token: `${prefix}${'a'.repeat(20)}` };
    if (row.provider === 'apns') return { apns_token: Buffer.from(prefix, 'latin1').toString('hex') + 'ab'.repeat(32) };
    return { web_push_subscription: fakes().webpush.subscription(`${prefix}sub`) };
  }

  it('answers each row of the table as documented', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const problems = async (provider: Provider): Promise<number> => {
      const view = (
        await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: ctx().secret })
      ).json();
      return (view[provider]?.problem?.deliveries as number | undefined) ?? 0;
    };
    const mismatches: unknown[] = [];
    for (const [n, row] of ROWS.entries()) {
      const user = `doc-${n}`;
      const deviceId = await registerDevice(ctx(), ctx().secret, user, address(row, n));
      const before = await problems(row.provider);
      const [result] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: deviceId }, title: 'x' }]);
      const message = (
        await ctx().inject({ method: 'GET', url: `/api/v1/messages/${result!.message_id}`, headers: ctx().secret })
      ).json();
      const devices = (
        await ctx().inject({ method: 'GET', url: `/api/v1/users/${user}/devices`, headers: ctx().secret })
      ).json<{ devices: Array<{ device_id: string; status: string }> }>();
      const device = devices.devices.find((d) => d.device_id === deviceId);
      // `once` refreshes provider auth: FCM exchanges a new access token; APNs may not re-sign a token this young (20-minute rule).
      const attempts = row.retry === 'yes' ? MAX_ATTEMPTS : row.retry === 'once' && row.provider === 'fcm' ? 2 : 1;
      const expected = { status: row.status, reason: row.reason, attempts, token: row.token, problem: row.problem };
      const got = {
        status: result!.status,
        reason: result!.additional_params.failure_reason,
        attempts: message.attempts,
        token: device === undefined ? 'removed' : device.status === 'disabled' ? 'disabled' : '—',
        problem: (await problems(row.provider)) > before,
      };
      if (JSON.stringify(got) !== JSON.stringify(expected))
        mismatches.push({ row: `${row.provider} ${row.name}`, expected, got });
    }
    expect(mismatches).toEqual([]);
  });
});
