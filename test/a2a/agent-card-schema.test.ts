import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { AgentCard } from '@a2a-js/sdk';
import { createGenerator } from 'ts-json-schema-generator';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { rpc, type Json } from './a2a-helpers.js';

/**
 * The cards against the published shapes of both versions, as the official SDK (an npm package)
 * ships them; no JSON Schema file of A2A is published on npm:
 * - v0.3: `@a2a-js/sdk` carries the v0.3 types generated from the v0.3 JSON Schema
 *   (`compat/v0_3/server`, "referenced by MySchema's JSON-Schema via the definition AgentCard").
 *   We turn those types back into a JSON Schema and validate with ajv. Unknown fields are allowed:
 *   v0.3 ignores them, and the public card carries v1's fields too.
 * - v1.0: the SDK's ProtoJSON codec of `a2a.proto` (`AgentCard.fromJSON`/`toJSON`): a card that
 *   survives the round trip unchanged has only fields of the proto, each of the proto's type.
 */
type ObjectSchema = { properties: Record<string, unknown> };
let v0_3Schema: ObjectSchema | undefined;
function v0_3AgentCardSchema(): ObjectSchema {
  if (v0_3Schema) return v0_3Schema;
  const typesFile = createRequire(import.meta.url)
    .resolve('@a2a-js/sdk/compat/v0_3/server')
    .replace(/index\.c?js$/, 'index.d.ts');
  v0_3Schema = createGenerator({
    path: typesFile,
    type: 'AgentCard',
    expose: 'all',
    topRef: false,
    skipTypeCheck: true,
    additionalProperties: true,
  }).createSchema('AgentCard') as unknown as ObjectSchema;
  return v0_3Schema;
}

/** The fields `a2a.proto` (v1.0) marks REQUIRED on the card and what it holds. */
const V1_REQUIRED = {
  card: [
    'name',
    'description',
    'supportedInterfaces',
    'version',
    'capabilities',
    'defaultInputModes',
    'defaultOutputModes',
    'skills',
  ],
  supportedInterfaces: ['url', 'protocolBinding', 'protocolVersion'],
  skills: ['id', 'name', 'description', 'tags'],
};

function expectV1Card(card: Json): void {
  expect(AgentCard.toJSON(AgentCard.fromJSON(card))).toEqual(withoutEmptyLists(stripV0_3(card)));
  for (const field of V1_REQUIRED.card) expect(card, field).toHaveProperty(field);
  for (const i of card.supportedInterfaces)
    for (const field of V1_REQUIRED.supportedInterfaces) expect(i[field], field).toBeTruthy();
  for (const s of card.skills) for (const field of V1_REQUIRED.skills) expect(s[field], field).toBeTruthy();
  expect(card.supportedInterfaces.length).toBeGreaterThan(0);
}

/** ProtoJSON writes no empty repeated field: `{ list: [] }` and `{}` are the same value. */
function withoutEmptyLists(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutEmptyLists);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => !(Array.isArray(v) && v.length === 0))
      .map(([k, v]) => [k, withoutEmptyLists(v)]),
  );
}

/** The card as a v1.0 reader keeps it: v0.3's own keys are unknown fields there. */
function stripV0_3(card: Json): Json {
  const {
    protocolVersion: _p,
    url: _u,
    preferredTransport: _t,
    additionalInterfaces: _a,
    security: _s,
    supportsAuthenticatedExtendedCard: _x,
    ...v1
  } = card;
  const { stateTransitionHistory: _h, ...capabilities } = v1.capabilities;
  const securitySchemes = Object.fromEntries(
    Object.entries(v1.securitySchemes as Record<string, Json>).map(
      ([k, { type: _ty, in: _in, name: _n, description: _d, ...scheme }]) => [k, scheme],
    ),
  );
  return { ...v1, capabilities, securitySchemes };
}

describe.each(TEST_DIALECTS)('agent cards against the published v1.0 and v0.3 shapes on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  let validateV0_3: ReturnType<Ajv['compile']>;

  beforeAll(() => {
    validateV0_3 = new Ajv({ strict: false, allErrors: true }).compile(v0_3AgentCardSchema());
  });

  const publicCard = async () =>
    (
      await ctx().inject({ method: 'GET', url: '/.well-known/agent-card.json', headers: { host: 'herald.test' } })
    ).json();

  it('the v0.3 schema is the real one: it refuses a card without v0.3 fields', () => {
    expect(
      validateV0_3({
        name: 'x',
        description: 'y',
        version: '1',
        capabilities: {},
        defaultInputModes: [],
        defaultOutputModes: [],
        skills: [],
      }),
    ).toBe(false);
    expect(validateV0_3.errors?.map((e) => e.params)).toEqual(
      expect.arrayContaining([{ missingProperty: 'protocolVersion' }, { missingProperty: 'url' }]),
    );
  });

  it('the public card is a valid v0.3 card with every v0.3 field Herald has, supportsAuthenticatedExtendedCard included', async () => {
    const card = await publicCard();
    expect(validateV0_3(card), JSON.stringify(validateV0_3.errors)).toBe(true);
    expect(card).toMatchObject({
      protocolVersion: '0.3.0',
      url: 'http://herald.test/a2a',
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url: 'http://herald.test/a2a', transport: 'JSONRPC' }],
      capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      security: [{ apiKey: [] }],
      supportsAuthenticatedExtendedCard: true,
    });
    // Every v0.3 field is there but the optional ones Herald has nothing for.
    const absent = Object.keys(v0_3AgentCardSchema().properties).filter((k) => !(k in card));
    expect(absent.sort()).toEqual(['documentationUrl', 'iconUrl', 'provider', 'signatures']);
  });

  it('the public card is a complete v1.0 card too', async () => {
    const card = await publicCard();
    expectV1Card(card);
    expect(card.capabilities.extendedAgentCard).toBe(true);
    expect(card.securitySchemes.apiKey.apiKeySecurityScheme).toMatchObject({ name: 'X-API-Key', location: 'header' });
  });

  it('the extended cards are valid in their own version', async () => {
    const v1 = (await rpc(ctx(), 'GetExtendedAgentCard', undefined, { version: '1.0' })).json().result;
    expectV1Card(v1);
    expect(AgentCard.toJSON(AgentCard.fromJSON(v1))).toEqual(withoutEmptyLists(v1));
    const v03 = (await rpc(ctx(), 'agent/getAuthenticatedExtendedCard', undefined, { version: '0.3' })).json().result;
    expect(validateV0_3(v03), JSON.stringify(validateV0_3.errors)).toBe(true);
    expect(v03.supportsAuthenticatedExtendedCard).toBe(true);
  });
});
