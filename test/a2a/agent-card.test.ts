import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { rpc, type Json } from './a2a-helpers.js';

describe.each(TEST_DIALECTS)('agent card on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('is public and carries the spec fields, the v1.0 required fields and the built-in skills (rule `agent-card`)', async () => {
    const res = await ctx().inject({
      method: 'GET',
      url: '/.well-known/agent-card.json',
      headers: { host: 'herald.test:8443' },
    });
    expect(res.statusCode).toBe(200);
    const card = res.json();
    expect(card).toMatchObject({
      name: 'Herald',
      supportedInterfaces: [{ url: 'http://herald.test:8443/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
      securitySchemes: {
        apiKey: { apiKeySecurityScheme: { name: 'X-API-Key', location: 'header', description: expect.any(String) } },
      },
      securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      version: expect.any(String),
      protocolVersion: '0.3.0',
      url: 'http://herald.test:8443/a2a',
      preferredTransport: 'JSONRPC',
    });
    expect(card.supportedInterfaces).toHaveLength(1);
    expect(card.skills.map((s: Json) => s.id)).toEqual([
      'create-user',
      'track-event',
      'send-push-notification',
      'trigger-campaign',
      'preview-campaign',
      'explain-delivery',
      'cancel-trigger',
      'list-campaigns',
      'get-campaign-stats',
    ]);
    for (const skill of card.skills)
      expect(skill).toMatchObject({
        name: expect.any(String),
        description: expect.any(String),
        tags: expect.any(Array),
        examples: expect.any(Array),
      });
  });

  it('sends ETag and private Cache-Control (it follows Host) and answers 304 to If-None-Match', async () => {
    const first = await ctx().inject({ method: 'GET', url: '/.well-known/agent-card.json' });
    expect(first.headers['cache-control']).toBe('private, no-cache');
    expect(first.headers.vary).toMatch(/\bHost\b/i);
    expect(first.headers.etag).toMatch(/^W\/".+"$/);
    expect(first.headers['x-request-id']).toBeTruthy();
    const again = await ctx().inject({
      method: 'GET',
      url: '/.well-known/agent-card.json',
      headers: { 'if-none-match': String(first.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const changed = await ctx().inject({
      method: 'GET',
      url: '/.well-known/agent-card.json',
      headers: { 'if-none-match': 'W/"other"' },
    });
    expect(changed.statusCode).toBe(200);
  });

  it("the extended card names the caller's project, in v1 and v0.3 shapes", async () => {
    const { project } = await ctx().newProject('Acme Mobile');
    const v1 = (await rpc(ctx(), 'GetExtendedAgentCard', {}, { version: '1.0', key: project.secret_key })).json()
      .result;
    expect(v1.description).toContain('Acme Mobile');
    expect(v1.description).toContain(project.project_id);
    expect(v1.supportedInterfaces[0].protocolVersion).toBe('1.0');
    const v03 = (
      await rpc(ctx(), 'agent/getAuthenticatedExtendedCard', undefined, { version: '0.3', key: project.secret_key })
    ).json().result;
    expect(v03).toMatchObject({
      protocolVersion: '0.3.0',
      url: expect.stringMatching(/\/a2a$/),
      preferredTransport: 'JSONRPC',
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      supportsAuthenticatedExtendedCard: true,
    });
    expect(v03.description).toContain('Acme Mobile');
  });
});

describe.each(TEST_DIALECTS)('agent card with PUBLIC_URL on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { PUBLIC_URL: 'https://api.example.com/herald/' } });

  it('takes interface URLs from PUBLIC_URL', async () => {
    const card = (await ctx().inject({ method: 'GET', url: '/.well-known/agent-card.json' })).json();
    expect(card.supportedInterfaces[0].url).toBe('https://api.example.com/herald/a2a');
    expect(card.url).toBe('https://api.example.com/herald/a2a');
    expect(card.additionalInterfaces).toEqual([{ url: 'https://api.example.com/herald/a2a', transport: 'JSONRPC' }]);
  });

  it('is publicly cacheable then, since it no longer depends on the request', async () => {
    const res = await ctx().inject({
      method: 'GET',
      url: '/.well-known/agent-card.json',
      headers: { host: 'evil.example' },
    });
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.json().supportedInterfaces[0].url).toBe('https://api.example.com/herald/a2a');
  });
});
