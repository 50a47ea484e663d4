import fc from 'fast-check';

/** A JSON Schema as TypeBox and the OpenAPI document write them (the subset Herald's routes use). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON Schema keywords take values of every type
export type Schema = Record<string, any>;

/** Strings that mean something to Herald (ids of rows the test made, enum values, URLs). */
export const KNOWN_STRINGS: string[] = [];

const plainStrings = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    'u1',
    'alice',
    'android',
    'ios',
    'web',
    'fcm',
    'apns',
    'webpush',
    'https://example.com/hook',
    'mailto:ops@example.com',
    'text/plain',
    'user',
    'agent',
    'ROLE_USER',
  ),
  fc.nat().map((i) => (KNOWN_STRINGS.length > 0 ? KNOWN_STRINGS[i % KNOWN_STRINGS.length]! : 'u1')),
);

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as string[]));
  if (typeof schema.pattern === 'string' && !/\\u|\\x|\[\^/.test(schema.pattern)) {
    try {
      return fc.oneof(
        fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 300)),
        plainStrings,
      );
    } catch {
      // fall through to plain strings
    }
  }
  return plainStrings;
}

/** Values of the schema's shape, mostly valid, so requests get past validation into the services. */
export function arbitraryFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined || depth > 6) return fc.jsonValue({ maxDepth: 2 });
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf))
    return fc.oneof(...(schema.anyOf ?? schema.oneOf).map((s: Schema) => arbitraryFor(s, depth + 1)));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -10, max: schema.maximum ?? 1000 });
    case 'number':
      return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -5, max: 100 }));
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(arbitraryFor(schema.items, depth + 1), {
        minLength: Math.min(schema.minItems ?? 0, 3),
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'object': {
      const properties: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, s] of Object.entries(properties)) record[name] = arbitraryFor(s, depth + 1);
      const known = fc.record(record, { requiredKeys: Object.keys(properties).filter((k) => required.has(k)) });
      const extra =
        schema.additionalProperties ??
        (schema.patternProperties ? Object.values(schema.patternProperties)[0] : undefined);
      if (extra && typeof extra === 'object') {
        return fc
          .tuple(
            known,
            fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), arbitraryFor(extra as Schema, depth + 1), {
              maxKeys: 3,
            }),
          )
          .map(([a, b]) => ({ ...b, ...a }));
      }
      return known;
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Nested arrays or objects `depth` levels deep, built without recursion. */
export function deeplyNested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Hostile replacement values (as JSON text, so prototype keys and raw escapes survive). */
export const hostileJson = fc.oneof(
  fc.constantFrom(
    '"a\\u0000b"',
    '"\\u0000"',
    '"\\ud800"',
    '"x\\udc00y"',
    '"\\ud83d"',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"prototype":1}',
    '{"a\\u0000":1}',
    '{"\\udfff":1}',
    'null',
    'true',
    '-1e309',
    '1e308',
    '-0',
    '12345678901234567890123',
    '[]',
    '{}',
    '""',
    '"   "',
    '"%00%ZZ"',
    '"{{ 7 | times: 7 }}"',
    '"{% include \'package.json\' %}"',
  ),
  fc.constantFrom(40, 5000, 20000).chain((d) => fc.constantFrom(deeplyNested(d, 'array'), deeplyNested(d, 'object'))),
  fc.integer({ min: 300, max: 300_000 }).map((n) => JSON.stringify('x'.repeat(n))),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
);

/**
 * The value as JSON text with one hostile replacement: at a random place (a property, an array
 * element or the whole value) when `mutate` is set.
 */
export function toJsonWithMutation(value: unknown, mutate: { at: number; text: string } | undefined): string {
  if (!mutate) return JSON.stringify(value);
  const marker = `__HOSTILE_${Math.random().toString(36).slice(2)}__`;
  const places: Array<() => void> = [];
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        places.push(() => (v[i] = marker));
        visit(item);
      });
    } else if (v !== null && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      places.push(() => (o[`k${places.length}`] = marker));
      for (const key of Object.keys(o)) {
        places.push(() => (o[key] = marker));
        visit(o[key]);
      }
    }
  };
  const copy = structuredClone(value);
  visit(copy);
  if (places.length === 0) return mutate.text;
  places[mutate.at % places.length]!();
  return JSON.stringify(copy).replace(JSON.stringify(marker), mutate.text);
}
