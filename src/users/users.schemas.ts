import { Type, type Static } from '@sinclair/typebox';

/**
 * Rule `user-id`: 1 to 255 characters, no control characters. Patterns run with the `u` flag, so a lone
 * surrogate (not Unicode text; PostgreSQL would store it as U+FFFD) counts as excluded too.
 */
export const PROJECT_USER_ID_PATTERN = '^[^\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF]+$';
export const ProjectUserId = Type.String({ minLength: 1, maxLength: 255, pattern: PROJECT_USER_ID_PATTERN });

/** Text both databases store unchanged: PostgreSQL refuses NUL in text and jsonb; lone surrogates are not text. */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';

/** Rule `user-properties`: its limits. A string value's 8 KiB counts UTF-8 bytes (checked in the service; the schema bounds characters). */
export const MAX_PROPERTIES = 256;
export const MAX_PROPERTY_KEY_LENGTH = 128;
export const MAX_PROPERTY_VALUE_BYTES = 8192;

/** Flat values only (rule `user-properties`); numbers are finite by JSON's own grammar. */
export const PropertyValue = Type.Union([
  Type.String({ maxLength: MAX_PROPERTY_VALUE_BYTES, pattern: STORABLE_TEXT_PATTERN }),
  Type.Number(),
  Type.Boolean(),
  Type.Null(),
]);
export const Properties = Type.Record(Type.String(), PropertyValue, {
  maxProperties: MAX_PROPERTIES,
  propertyNames: { minLength: 1, maxLength: MAX_PROPERTY_KEY_LENGTH, pattern: STORABLE_TEXT_PATTERN },
});
export type Properties = Static<typeof Properties>;

export const CreateUserBody = Type.Object(
  { project_user_id: ProjectUserId, properties: Type.Optional(Properties) },
  {
    title: 'CreateUserRequest',
    examples: [{ project_user_id: 'user-42', properties: { plan: 'pro', country: 'DE', trial: false, seats: 3 } }],
  },
);
export const PatchUserBody = Type.Object(
  { properties: Type.Optional(Properties) },
  { title: 'UpdateUserRequest', examples: [{ properties: { plan: 'enterprise', trial: null } }] },
);
export const UserParams = Type.Object({ project_user_id: Type.String() });
export const PropertiesResponse = Type.Object(
  { properties: Properties },
  { title: 'UserProperties', examples: [{ properties: { plan: 'pro', country: 'DE', trial: false, seats: 3 } }] },
);

const projectUserIdRegExp = new RegExp(PROJECT_USER_ID_PATTERN, 'u');

/** Path ids arrive percent-decoded; the same rule `user-id` applies to them as to bodies. */
export function isValidProjectUserId(value: unknown): value is string {
  return (
    typeof value === 'string' && value.length >= 1 && withinCodePoints(value, 255) && projectUserIdRegExp.test(value)
  );
}

/**
 * Whether `text` has at most `max` code points. A string of at most `max` UTF-16 units qualifies
 * without counting (there are never more code points than units), which is every real id or key.
 */
export function withinCodePoints(text: string, max: number): boolean {
  if (text.length <= max) return true;
  let count = 0;
  for (const _ of text) if (++count > max) return false;
  return true;
}
