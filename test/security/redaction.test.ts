import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_LOGGED_TEXT, REDACTED, redactText } from '../../src/lib/redact.js';

/**
 * What the log redaction hides (src/lib/redact.ts): URL userinfo, query strings of URLs and request
 * paths, `svc_sk_`/`svc_pk_` keys; and that it cuts long text without uncovering any of them. Its
 * cost on hostile input is checked through a listening server in event-loop-attack.test.ts.
 */
describe('log redaction', () => {
  it('hides userinfo, query strings and API keys, and keeps the rest', () => {
    const cases: Array<[string, string]> = [
      ['https://admin:pa55@db.internal:5432/x?sslkey=abc', `https://${REDACTED}@db.internal:5432/x?${REDACTED}`],
      ['redis://u:pw@cache:6379/0', `redis://${REDACTED}@cache:6379/0`],
      [
        'see https://h.example/p?q=1#frag and /path?x=y',
        `see https://h.example/p?${REDACTED}#frag and /path?${REDACTED}`,
      ],
      ['GET /api/v1/users/nobody?api_key=1&token=2', `GET /api/v1/users/nobody?${REDACTED}`],
      ['key svc_sk_abcDEF123-_x and svc_pk_z.', `key svc_sk_${REDACTED} and svc_pk_${REDACTED}.`],
      ["url='https://h/p?a=1' next", `url='https://h/p?${REDACTED}' next`],
      // A password with an unescaped `@`: everything up to the authority's last `@` is userinfo.
      ['postgres://user:p@ss@db/x', `postgres://${REDACTED}@db/x`],
      // A URL inside a query whose userinfo runs on past a quote.
      ['/p?next=https://u"x@host/y?z=1 ok', `/p?${REDACTED}@host/y?${REDACTED} ok`],
      // Not secrets: a question without a path, an e-mail address, a word that merely contains svc_sk_.
      ['what? mail me at a@b.example', 'what? mail me at a@b.example'],
      ['mysvc_sk_abc', 'mysvc_sk_abc'],
      ['svc_sk_', 'svc_sk_'],
      ['//no-userinfo.example/path', '//no-userinfo.example/path'],
    ];
    for (const [text, redacted] of cases) expect(redactText(text), text).toBe(redacted);
  });

  it('returns short text without secrets unchanged, as the same string', () => {
    const text = 'request completed /api/v1/users/alice';
    expect(redactText(text)).toBe(text);
  });

  it('cuts text longer than the limit, says how much, and hides an authority the cut interrupts', () => {
    const long = `/api/v1/users/${'a'.repeat(MAX_LOGGED_TEXT * 2)}`;
    const out = redactText(long);
    expect(out.length).toBeLessThan(MAX_LOGGED_TEXT + 40);
    expect(out.startsWith('/api/v1/users/aaa')).toBe(true);
    expect(out).toMatch(/…\[\d+ more characters\]$/);
    expect(out).toContain(`[${long.length - MAX_LOGGED_TEXT} more characters]`);

    // Userinfo whose `@` falls after the cut: the part before the cut is hidden all the same.
    const prefix = 'x'.repeat(MAX_LOGGED_TEXT - 30);
    const cutUserinfo = `${prefix} https://user:${'s'.repeat(100)}@host/`;
    const redacted = redactText(cutUserinfo);
    expect(redacted).toContain(`https://${REDACTED}…[`);
    expect(redacted).not.toContain('user:sss');

    // A query or a key interrupted by the cut stays hidden.
    expect(redactText(`${'x'.repeat(MAX_LOGGED_TEXT - 20)} /p?token=${'t'.repeat(100)}`)).not.toContain('token=');
    expect(redactText(`${'x'.repeat(MAX_LOGGED_TEXT - 12)} svc_sk_${'k'.repeat(100)}`)).not.toContain('svc_sk_k');
  });

  it('never cuts a surrogate pair in half', () => {
    const text = `${'x'.repeat(MAX_LOGGED_TEXT - 1)}😀${'y'.repeat(10)}`;
    const out = redactText(text);
    expect(out.startsWith(`${'x'.repeat(MAX_LOGGED_TEXT - 1)}…`)).toBe(true);
  });

  it('hides a secret planted in any surroundings (generated)', () => {
    const noise = fc.string({
      unit: fc.constantFrom('/', '?', '@', ':', '#', '"', "'", ' ', '\n', 'a', 'Z', '9', '_', '-', '.', 's', '%'),
      maxLength: 60,
    });
    const secret = fc.stringMatching(/^[A-Za-z0-9]{6,20}$/).map((s) => `SECRET${s}`);
    const placements = [
      (s: string) => ` https://user:${s}@host.example/x `,
      (s: string) => ` https://${s}@host.example `,
      (s: string) => ` /api/v1/users/x?token=${s} `,
      (s: string) => ` https://h.example/p?a=1&b=${s}#f `,
      (s: string) => ` svc_sk_${s} `,
      (s: string) => ` svc_pk_${s} `,
    ];
    fc.assert(
      fc.property(noise, secret, noise, fc.nat(placements.length - 1), (before, s, after, which) => {
        const out = redactText(`${before}${placements[which]!(s)}${after}`);
        expect(out).not.toContain(s);
      }),
      { numRuns: 5000 },
    );
  });

  it('is idempotent (a URL redacted before it is logged is not changed again)', () => {
    const text = fc.string({
      unit: fc.constantFrom('/', '?', '@', ':', '#', '"', "'", ' ', 'a', 's', 'v', 'c', '_', 'k', 'p', '['),
      maxLength: 80,
    });
    fc.assert(
      fc.property(text, (t) => {
        const once = redactText(t);
        expect(redactText(once)).toBe(once);
      }),
      { numRuns: 5000 },
    );
  });
});
