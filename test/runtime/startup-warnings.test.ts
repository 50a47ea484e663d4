import { describe, expect, it } from 'vitest';
import { isLoopbackHost, startupWarnings } from '../../src/boot/startup-warnings.js';

// Which configurations get the plain-HTTP warning (test/runtime/startup-errors.test.ts sees it in a
// real start): an API listening beyond this machine without TLS and without BEHIND_TLS_PROXY.
describe('the plain-HTTP warning at start', () => {
  const base = {
    role: 'all',
    tlsCertFile: undefined,
    behindTlsProxy: false,
    databaseUrl: 'postgres://x/y',
    dataDir: '/nonexistent',
  } as const;
  const warned = (config: Partial<Parameters<typeof startupWarnings>[0]> & { host: string }) =>
    startupWarnings({ ...base, ...config }).some((w) => w.message.startsWith('serving plain HTTP'));

  it.each(['0.0.0.0', '::', '10.1.2.3', '192.0.2.7', 'herald.example.com', '::ffff:10.0.0.1'])('%s: warned', (host) => {
    expect(warned({ host })).toBe(true);
  });

  it.each(['127.0.0.1', '127.3.2.1', '::1', '[::1]', 'localhost', 'LOCALHOST'])('%s (loopback): not warned', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
    expect(warned({ host })).toBe(false);
  });

  it('not with TLS, not with BEHIND_TLS_PROXY, not for a worker (no API)', () => {
    expect(warned({ host: '0.0.0.0', tlsCertFile: '/etc/herald/cert.pem' })).toBe(false);
    expect(warned({ host: '0.0.0.0', behindTlsProxy: true })).toBe(false);
    expect(warned({ host: '0.0.0.0', role: 'worker' })).toBe(false);
    expect(warned({ host: '0.0.0.0', role: 'api' })).toBe(true);
  });
});
