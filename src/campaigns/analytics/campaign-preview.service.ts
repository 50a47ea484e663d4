import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import { measurePayloads, type MeasuredPayload } from '../../push/payload-measure.js';
import { findUser } from '../../users/users.service.js';
import { isValidProjectUserId } from '../../users/users.schemas.js';
import { findCampaign } from '../campaigns.service.js';
import { triggerPropertiesRequiredBy } from '../../conditions/resolve-trigger-refs.js';
import type { TemplateRenderer } from '../templates/render-pool.js';
import { parseTriggerProperties } from '../triggers/trigger-body.js';
import { parseMessageTemplate, triggerPropertiesRequiredByMessage } from '../templates/templates.js';
import { canonicalLocale, localizedMessage, messageLocaleFor, userLocale } from '../templates/locales.js';

export interface PreviewDeps {
  db: Db;
  /** The sample event's default time (an event-triggered campaign's `event.timestamp`). */
  clock: Clock;
  /** The same worker pool a trigger renders in: sandboxed, off the event loop, within the budgets (in its interactive lane). */
  templates: TemplateRenderer;
}

export interface PreviewWarning {
  code: 'missing_property';
  property: string;
  message: string;
}

export interface CampaignPreview {
  title: string;
  body: string;
  image_url?: string;
  landing_url?: string;
  payloads: MeasuredPayload[];
  warnings: PreviewWarning[];
  /**
   * Rule `message-locales`: the locale previewed (the body's `locale`, else the user's, canonical; null for
   * none) and the message locale whose fields were used (null: the default fields).
   */
  locale: { user_locale: string | null; message_locale: string | null };
}

/** A trigger id as long as a real one: the message's `data` carries it, so the sizes are a real send's. */
const SAMPLE_TRIGGER_ID = '00000000-0000-4000-8000-000000000000';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Longest sample event properties a preview takes (JSON characters). */
const MAX_EVENT_PROPERTIES_CHARS = 64 * 1024;

/** The sample event of an event-triggered campaign's preview. */
export interface PreviewEvent {
  properties: Record<string, unknown>;
  timestamp?: number;
}

/** The body as REST and A2A give it: a user id, the trigger properties (the trigger's own rules, rule `trigger-body`) and a sample event. */
export function parsePreviewInput(input: unknown): {
  projectUserId: string;
  properties: Record<string, string | number | boolean>;
  event?: PreviewEvent;
  locale?: string;
} {
  const code = 'INVALID_PREVIEW_BODY';
  if (!isObject(input)) throw new AppError('invalid', code, 'The body must be a JSON object');
  const extra = Object.keys(input).find(
    (k) => k !== 'project_user_id' && k !== 'properties' && k !== 'event' && k !== 'locale',
  );
  if (extra !== undefined) throw new AppError('invalid', code, `Unexpected field "${extra}"`);
  if (!isValidProjectUserId(input.project_user_id))
    throw new AppError('invalid', code, 'project_user_id must be 1 to 255 characters without control characters');
  const locale = input.locale === undefined ? undefined : canonicalLocale(input.locale);
  if (input.locale !== undefined && locale === undefined)
    throw new AppError('invalid', code, 'locale must be a BCP 47 language tag such as "fr" or "fr-CA"');
  return {
    ...(locale !== undefined && { locale }),
    projectUserId: input.project_user_id,
    properties: parseTriggerProperties(input.properties, 'properties', code),
    ...(input.event !== undefined && { event: parsePreviewEvent(input.event, code) }),
  };
}

function parsePreviewEvent(input: unknown, code: string): PreviewEvent {
  const shape = 'event must be {"properties"?: {...}, "timestamp"?: "<RFC 3339>"}';
  if (!isObject(input)) throw new AppError('invalid', code, shape);
  const extra = Object.keys(input).find((k) => k !== 'properties' && k !== 'timestamp');
  if (extra !== undefined) throw new AppError('invalid', code, `${shape}: unexpected field "${extra}"`);
  const properties = input.properties ?? {};
  if (!isObject(properties)) throw new AppError('invalid', code, 'event.properties must be a JSON object');
  if (JSON.stringify(properties).length > MAX_EVENT_PROPERTIES_CHARS)
    throw new AppError(
      'invalid',
      code,
      `event.properties must be at most ${MAX_EVENT_PROPERTIES_CHARS} characters of JSON`,
    );
  if (input.timestamp === undefined) return { properties };
  const timestamp = typeof input.timestamp === 'string' ? Date.parse(input.timestamp) : NaN;
  if (!Number.isFinite(timestamp)) throw new AppError('invalid', code, 'event.timestamp must be an RFC 3339 instant');
  return { properties, timestamp };
}

/**
 * The campaign's message as a trigger would render it for one user: the same worker
 * pool and budgets, the same scope, the same payload builders and limits as the senders. A trigger
 * property the campaign reads but the preview lacks (a real trigger would be refused) is a warning,
 * and renders as `{{trigger.<name>}}` so the rest of the message can still be seen. A render the
 * real trigger would skip for this user (a user property it lacks, a budget) is a 400 naming why.
 */
export async function previewCampaign(
  deps: PreviewDeps,
  projectId: string,
  campaignId: string,
  input: unknown,
): Promise<CampaignPreview> {
  const { projectUserId, properties, event, locale } = parsePreviewInput(input);
  const campaign = await findCampaign(deps.db, projectId, campaignId);
  if (!campaign) throw new AppError('not_found', 'CAMPAIGN_NOT_FOUND', `Campaign ${campaignId} does not exist`);
  if (event && !campaign.eventTrigger)
    throw new AppError('invalid', 'INVALID_PREVIEW_BODY', 'event applies only to an event-triggered campaign');
  // An event-triggered campaign's sends read `event.*`: the preview's sample event (empty properties by default).
  const eventScope = campaign.eventTrigger && {
    event: {
      name: campaign.eventTrigger.event,
      timestamp: new Date(event?.timestamp ?? deps.clock.now()).toISOString(),
      properties: event?.properties ?? {},
    },
  };
  const user = await findUser(deps.db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);

  const required = triggerPropertiesRequiredBy(
    campaign.audienceConditions,
    triggerPropertiesRequiredByMessage(parseMessageTemplate(campaign.message)),
  );
  const missing = [...required].filter((name) => !Object.hasOwn(properties, name)).sort();
  const trigger = { ...properties };
  for (const name of missing) trigger[name] = `{{trigger.${name}}}`;

  // Rule `message-locales`: the fields of the locale asked for, else of the user's own, as a send chooses them.
  const userLocaleTag = locale ?? userLocale(campaign.message, user.properties) ?? null;
  const messageLocale = messageLocaleFor(campaign.message, userLocaleTag ?? undefined);
  const [outcome] = await deps.templates.render(
    localizedMessage(campaign.message, messageLocale),
    [
      {
        trigger,
        user: { ...user.properties, project_user_id: user.projectUserId },
        campaign: { campaign_id: campaign.campaignId, name: campaign.name },
        ...eventScope,
      },
    ],
    { projectId, interactive: true },
  );
  if (!outcome!.ok) throw new AppError('invalid', outcome!.reason, outcome!.detail);
  const rendered = outcome!.message;
  const message = {
    ...rendered,
    data: { herald_campaign_id: campaign.campaignId, herald_trigger_id: SAMPLE_TRIGGER_ID },
  };
  return {
    // A field that rendered empty is left out of the payloads; here it is '' so a display needs no check.
    title: rendered.title ?? '',
    body: rendered.body ?? '',
    ...(rendered.imageUrl !== undefined && { image_url: rendered.imageUrl }),
    ...(rendered.landingUrl !== undefined && { landing_url: rendered.landingUrl }),
    payloads: measurePayloads(message),
    warnings: missing.map((property) => ({
      code: 'missing_property' as const,
      property,
      message: `The campaign reads trigger.${property}, which the preview does not supply; a trigger without it is refused`,
    })),
    locale: { user_locale: userLocaleTag, message_locale: messageLocale },
  };
}
