import { Type, type Static } from '@sinclair/typebox';

/** R3: 1 to 255 characters, no control characters. */
export const PROJECT_USER_ID_PATTERN = '^[^\\u0000-\\u001F\\u007F-\\u009F]+$';
export const ProjectUserId = Type.String({ minLength: 1, maxLength: 255, pattern: PROJECT_USER_ID_PATTERN });

/** R4: flat values only; strings up to 8 KiB; numbers are finite by JSON's own grammar. */
export const PropertyValue = Type.Union([Type.String({ maxLength: 8192 }), Type.Number(), Type.Boolean(), Type.Null()]);
export const MAX_PROPERTIES = 256;
export const Properties = Type.Record(Type.String(), PropertyValue, {
  maxProperties: MAX_PROPERTIES,
  propertyNames: { minLength: 1, maxLength: 128 },
});
export type Properties = Static<typeof Properties>;

export const CreateUserBody = Type.Object({ project_user_id: ProjectUserId, properties: Type.Optional(Properties) });
export const PatchUserBody = Type.Object({ properties: Type.Optional(Properties) });
export const UserParams = Type.Object({ project_user_id: Type.String() });
export const PropertiesResponse = Type.Object({ properties: Properties });

const projectUserIdRegExp = new RegExp(PROJECT_USER_ID_PATTERN, 'u');

/** Path ids arrive percent-decoded; the same R3 rule applies to them as to bodies. */
export function isValidProjectUserId(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && [...value].length <= 255 && projectUserIdRegExp.test(value);
}
