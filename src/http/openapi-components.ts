import { isDeepStrictEqual } from 'node:util';

type Json = Record<string, unknown>;
type Document = { paths?: Record<string, Record<string, Json>>; components?: { schemas?: Record<string, unknown> } };

/**
 * Request and response schemas that carry a `title` (a TypeBox option that changes no validation)
 * become named components (`#/components/schemas/<title>`), so generated clients get named types
 * (`components['schemas']['Campaign']`). Two different schemas may not share a title.
 */
export function hoistNamedSchemas<T>(document: T): T {
  const doc = document as Document;
  const components = ((doc.components ??= {}).schemas ??= {});
  const name = (media: Json): void => {
    const schema = media.schema as Json | undefined;
    const title = schema?.title;
    if (typeof title !== 'string') return;
    const existing = components[title];
    if (existing !== undefined && !isDeepStrictEqual(existing, schema))
      throw new Error(`OpenAPI: two different schemas are titled ${title}`);
    components[title] = schema;
    media.schema = { $ref: `#/components/schemas/${title}` };
  };
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const body = operation.requestBody as { content?: Record<string, Json> } | undefined;
      for (const media of Object.values(body?.content ?? {})) name(media);
      const responses = (operation.responses ?? {}) as Record<string, { content?: Record<string, Json> }>;
      for (const response of Object.values(responses))
        for (const media of Object.values(response.content ?? {})) name(media);
    }
  }
  return document;
}
