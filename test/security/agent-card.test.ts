import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';

/** A forged Host must not put a foreign endpoint into a card that a shared cache keeps. */
const card = (ctx: TestContext, headers: Record<string, string>) =>
  ctx.inject({ method: 'GET', url: '/.well-known/agent-card.json', headers });

const extendedCard = (ctx: TestContext, headers: Record<string, string>) =>
  ctx.inject({
    method: 'POST',
    url: '/a2a',
    headers: {
      'content-type': 'application/json',
      'x-api-key': ctx.project.secret_key,
      'a2a-version': '1.0',
      ...headers,
    },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' }),
  });

const FORGED = { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'https' };

describe.each(TEST_DIALECTS)('agent card URL with PUBLIC_URL set, on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { PUBLIC_URL: 'https://herald.example.com' } });

  it('a forged Host changes nothing: every URL comes from PUBLIC_URL, and the card may be cached publicly', async () => {
    const res = await card(ctx(), FORGED);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('attacker');
    const body = res.json();
    expect(body.url).toBe('https://herald.example.com/a2a');
    expect(body.supportedInterfaces.map((i: { url: string }) => i.url)).toEqual(['https://herald.example.com/a2a']);
    expect(body.additionalInterfaces.map((i: { url: string }) => i.url)).toEqual(['https://herald.example.com/a2a']);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    const same = await card(ctx(), { host: 'herald.example.com' });
    expect(same.body).toBe(res.body);
    expect(same.headers.etag).toBe(res.headers.etag);
  });

  it('the extended card ignores a forged Host too', async () => {
    const res = await extendedCard(ctx(), FORGED);
    expect(res.body).not.toContain('attacker');
    expect(res.json().result.supportedInterfaces[0].url).toBe('https://herald.example.com/a2a');
  });
});

describe.each(TEST_DIALECTS)('agent card URL without PUBLIC_URL, on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('follows Host, but then says Vary: Host and forbids shared caching', async () => {
    const forged = await card(ctx(), { host: 'attacker.example' });
    expect(forged.statusCode).toBe(200);
    expect(forged.json().url).toBe('http://attacker.example/a2a');
    expect(forged.headers.vary).toMatch(/(^|,\s*)Host(\s*,|$)/i);
    const cacheControl = String(forged.headers['cache-control']);
    expect(cacheControl).toMatch(/\bprivate\b/);
    expect(cacheControl).toMatch(/\bno-cache\b/);
    expect(cacheControl).not.toMatch(/\bpublic\b|\bs-maxage\b/);
    // Different hosts give different cards and ETags, so no validator is shared between them.
    const real = await card(ctx(), { host: 'herald.internal:8080' });
    expect(real.json().url).toBe('http://herald.internal:8080/a2a');
    expect(real.headers.etag).not.toBe(forged.headers.etag);
    expect(real.headers.vary).toMatch(/Host/i);
  });

  it('X-Forwarded-Host is not trusted', async () => {
    const res = await card(ctx(), {
      host: 'herald.internal',
      'x-forwarded-host': 'attacker.example',
      'x-forwarded-proto': 'https',
    });
    expect(res.body).not.toContain('attacker');
    expect(res.json().url).toBe('http://herald.internal/a2a');
  });

  it('a 304 carries the same caching headers', async () => {
    const first = await card(ctx(), { host: 'herald.internal' });
    const again = await card(ctx(), { host: 'herald.internal', 'if-none-match': String(first.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect(again.headers['cache-control']).toBe('private, no-cache');
    expect(again.headers.vary).toMatch(/Host/i);
  });
});
