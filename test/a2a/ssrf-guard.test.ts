import { describe, expect, it } from 'vitest';
import { isPublicAddress, resolveWebhookTarget } from '../../src/a2a/ssrf-guard.js';

describe('webhook SSRF guard', () => {
  it.each([
    '127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1', '100.100.100.200', '0.0.0.0', '224.0.0.1',
    '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', '::ffff:10.0.0.1', 'ff02::1',
  ])('refuses %s', (address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])('allows %s', (address) => expect(isPublicAddress(address)).toBe(true));

  it('resolves once and refuses a host with any private answer', async () => {
    const lookup = async (host: string) => (host === 'mixed.example' ? [{ address: '8.8.8.8', family: 4 }, { address: '10.0.0.5', family: 4 }] : [{ address: '8.8.4.4', family: 4 }]);
    await expect(resolveWebhookTarget('https://mixed.example/hook', false, lookup)).rejects.toMatchObject({ code: 'WEBHOOK_URL_REFUSED' });
    await expect(resolveWebhookTarget('https://public.example/hook', false, lookup)).resolves.toMatchObject({ address: '8.8.4.4', family: 4 });
    await expect(resolveWebhookTarget('https://mixed.example/hook', true, lookup)).resolves.toMatchObject({ address: '8.8.8.8' });
  });

  it('refuses schemes other than http and https, and unresolvable hosts', async () => {
    const failing = async () => {
      throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(resolveWebhookTarget('ftp://8.8.8.8/x', false)).rejects.toMatchObject({ code: 'WEBHOOK_URL_REFUSED' });
    await expect(resolveWebhookTarget('https://nowhere.invalid/x', false, failing)).rejects.toMatchObject({ code: 'WEBHOOK_HOST_UNRESOLVED' });
  });
});
