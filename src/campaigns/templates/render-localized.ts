import { isLocalized, localizedMessage, messageLocaleFor, userLocale } from './locales.js';
import type { RenderOutcome } from './render-chunk.js';
import type { RenderRequest, TemplateRenderer } from './render-pool.js';
import type { MessageTemplate, RenderScope } from './templates.js';

/** One recipient: the scope it renders with, and its user's properties (where its locale is read). */
export interface LocalizedRecipient {
  scope: RenderScope;
  properties: Record<string, unknown>;
}

export interface LocalizedRender {
  /** Per recipient, in order. With `once`, recipients of one message locale share one outcome object. */
  outcomes: RenderOutcome[];
  /** Per recipient, the message locale its fields came from (rule `message-locales`), `null` for the default fields. */
  locales: (string | null)[];
}

/**
 * Renders a message for its recipients, each in its own language (rule `message-locales`): the
 * localized text is chosen here, on the caller's thread (a linear pass over each recipient's
 * locale property), then each message locale's recipients render in the worker pool as before,
 * sandboxed and within the budgets. `once`: the message reads nothing of its recipient, so one
 * render per message locale stands for all of its recipients (the first one's scope is used).
 */
export async function renderLocalized(
  renderer: TemplateRenderer,
  message: MessageTemplate,
  recipients: LocalizedRecipient[],
  request: RenderRequest,
  once = false,
): Promise<LocalizedRender> {
  if (recipients.length === 0) return { outcomes: [], locales: [] };
  const groups = new Map<string | null, number[]>();
  const locales = recipients.map((r, i) => {
    const tag = isLocalized(message) ? messageLocaleFor(message, userLocale(message, r.properties)) : null;
    const group = groups.get(tag);
    if (group) group.push(i);
    else groups.set(tag, [i]);
    return tag;
  });
  const outcomes = new Array<RenderOutcome>(recipients.length);
  await Promise.all(
    [...groups].map(async ([tag, indexes]) => {
      const text = localizedMessage(message, tag);
      if (once) {
        const [outcome] = await renderer.render(text, [recipients[indexes[0]!]!.scope], request);
        for (const i of indexes) outcomes[i] = outcome!;
        return;
      }
      const rendered = await renderer.render(
        text,
        indexes.map((i) => recipients[i]!.scope),
        request,
      );
      indexes.forEach((i, k) => (outcomes[i] = rendered[k]!));
    }),
  );
  return { outcomes, locales };
}
