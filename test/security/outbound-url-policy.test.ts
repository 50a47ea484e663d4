import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import {
  checkOutboundUrl,
  guardedLookup,
  isPublicAddress,
  resolveOutboundTarget,
  type Lookup,
} from '../../src/lib/outbound-url-policy.js';

const OFF = { allowPrivateNetworks: false };

describe('the outbound-URL policy', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '198.18.0.1',
    '240.0.0.1',
    '192.0.0.8',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '2001:db8::1',
    '100::1',
    'fec0::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::127.0.0.1',
    '::7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::a00:1',
    '64:ff9b:1::a9fe:a9fe',
    '::ffff:10.0.0.1',
    '::ffff:8.8.8.8',
    '::8.8.8.8',
    '64:ff9b::808:808',
    '2002:7f00:1::1',
    '2001::1',
  ])('refuses the address %s', (address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['8.8.8.8', '93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200a'])(
    'allows the public address %s',
    (address) => expect(isPublicAddress(address)).toBe(true),
  );

  it.each([
    'https://127.0.0.1/x',
    'https://localhost/x',
    'https://LOCALHOST./x',
    'https://app.localhost/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://[::ffff:7f00:1]/x',
    'https://[::1]/x',
    'https://2130706433/x',
    'https://0x7f.1/x',
    'https://017700000001/x',
    'https://0177.0.0.1/x',
    'https://127.1/x',
    'https://169.254.169.254/latest/meta-data',
    'https://10.0.0.1/x',
    'https://[fe80::1]/x',
    'https://[::127.0.0.1]/x',
    'https://[64:ff9b::7f00:1]/x',
    'https://100.64.0.1/x',
    'https://0/x',
    'https://user:pw@8.8.8.8/x',
    'http://8.8.8.8/x',
    'file:///etc/passwd',
    'not a url',
  ])('refuses the URL %s without any DNS', (url) => {
    expect(() => checkOutboundUrl(url, { ...OFF, lookup: () => Promise.reject(new Error('no DNS expected')) })).toThrow(
      /url/,
    );
  });

  it('refuses a host with any refused answer, and connects to the first checked one', async () => {
    const lookup: Lookup = async (host) =>
      host === 'mixed.example'
        ? [
            { address: '8.8.8.8', family: 4 },
            { address: '10.0.0.5', family: 4 },
          ]
        : [{ address: '8.8.4.4', family: 4 }];
    await expect(resolveOutboundTarget('https://mixed.example/hook', { ...OFF, lookup })).rejects.toMatchObject({
      code: 'OUTBOUND_URL_REFUSED',
    });
    await expect(resolveOutboundTarget('https://public.example/hook', { ...OFF, lookup })).resolves.toMatchObject({
      address: '8.8.4.4',
      family: 4,
    });
    await expect(
      resolveOutboundTarget('https://mixed.example/hook', { allowPrivateNetworks: true, lookup }),
    ).resolves.toMatchObject({ address: '8.8.8.8' });
  });

  it('treats an unresolvable or slow name as unresolved, not as refused', async () => {
    const failing: Lookup = () => Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }));
    await expect(resolveOutboundTarget('https://nowhere.invalid/x', { ...OFF, lookup: failing })).rejects.toMatchObject(
      { code: 'OUTBOUND_HOST_UNRESOLVED' },
    );
    const hanging: Lookup = () => new Promise(() => undefined);
    await expect(
      resolveOutboundTarget('https://slow.example/x', { ...OFF, lookup: hanging, resolveTimeoutMs: 50 }),
    ).rejects.toMatchObject({ code: 'OUTBOUND_HOST_UNRESOLVED' });
  });

  it('the agent lookup refuses a rebinding name before a socket is opened', async () => {
    // First answer public, every later one loopback: the classic rebinding pattern.
    let calls = 0;
    const rebinding: Lookup = async () =>
      ++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    await expect(
      resolveOutboundTarget('https://rebind.example/x', { ...OFF, lookup: rebinding }),
    ).resolves.toMatchObject({ address: '93.184.216.34' });
    const lookup = guardedLookup({ ...OFF, lookup: rebinding });
    const outcome = await new Promise<{ error: Error | null; address: unknown }>((resolve) =>
      lookup('rebind.example', {}, (error, address) => resolve({ error, address })),
    );
    expect(outcome.error).toMatchObject({ code: 'OUTBOUND_URL_REFUSED' });
    // And through a real socket: the connection fails in its lookup, with no connect attempted.
    const socket = net.connect({ host: 'rebind.example', port: 9, lookup });
    const failure = await new Promise<Error>((resolve) => socket.once('error', resolve));
    expect(failure).toMatchObject({ code: 'OUTBOUND_URL_REFUSED' });
    expect(socket.remoteAddress).toBeUndefined();
  });

  it('hands the socket exactly the checked address', async () => {
    const lookup = guardedLookup({
      ...OFF,
      lookup: async () => [
        { address: '8.8.8.8', family: 4 },
        { address: '2606:4700:4700::1111', family: 6 },
      ],
    });
    const all = await new Promise<unknown>((resolve) =>
      lookup('two.example', { all: true }, (_e, addresses) => resolve(addresses)),
    );
    expect(all).toEqual([{ address: '8.8.8.8', family: 4 }]);
  });
});

describe('the outbound settings', () => {
  it('reads OUTBOUND_ALLOW_PRIVATE_NETWORKS, with WEBHOOK_ALLOW_PRIVATE_NETWORKS as its alias', () => {
    expect(loadConfig({}).outboundAllowPrivateNetworks).toBe(false);
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).outboundAllowPrivateNetworks).toBe(true);
    expect(loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' }).outboundAllowPrivateNetworks).toBe(true);
    expect(
      loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
        .outboundAllowPrivateNetworks,
    ).toBe(false);
    expect(() => loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'maybe' })).toThrow(/OUTBOUND_ALLOW_PRIVATE_NETWORKS/);
  });

  it('reads FCM_TOKEN_URI_HOSTS as a list of host or host:port names', () => {
    expect(loadConfig({ FCM_TOKEN_URI_HOSTS: 'Tokens.Example.com, idp.example:8443' }).fcmTokenUriHosts).toEqual([
      'tokens.example.com',
      'idp.example:8443',
    ]);
    expect(() => loadConfig({ FCM_TOKEN_URI_HOSTS: 'https://x.example/token' })).toThrow(/FCM_TOKEN_URI_HOSTS/);
  });
});
