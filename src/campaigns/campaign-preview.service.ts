import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { measurePayloads, type MeasuredPayload } from '../push/payload-measure.js';
import { findUser } from '../users/users.service.js';
import { isValidProjectUserId } from '../users/users.schemas.js';
import { findCampaign } from './campaigns.service.js';
import { triggerPropertiesRequiredBy } from '../conditions/resolve-trigger-refs.js';
import type { TemplateRenderer } from './render-pool.js';
import { parseTriggerProperties } from './trigger-body.js';
import { parseMessageTemplate, triggerPropertiesRequiredByMessage } from './templates.js';

export interface PreviewDeps {
  db: Db;
  /** The same worker pool a trigger renders in: sandboxed, off the event loop, within the budgets (in its interactive lane). */
  templates: TemplateRenderer;
}

export interface PreviewInput {
  project_user_id: string;
  properties?: Record<string, unknown> | undefined;
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
}

/** A trigger id as long as a real one: the message's `data` carries it, so the sizes are a real send's. */
const SAMPLE_TRIGGER_ID = '00000000-0000-4000-8000-000000000000';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body as REST and A2A give it: a user id and the trigger properties (the trigger's own rules, rule `trigger-body`). */
export function parsePreviewInput(input: unknown): {
  projectUserId: string;
  properties: Record<string, string | number | boolean>;
} {
  const code = 'INVALID_PREVIEW_BODY';
  if (!isObject(input)) throw new AppError('invalid', code, 'The body must be a JSON object');
  const extra = Object.keys(input).find((k) => k !== 'project_user_id' && k !== 'properties');
  if (extra !== undefined) throw new AppError('invalid', code, `Unexpected field "${extra}"`);
  if (!isValidProjectUserId(input.project_user_id))
    throw new AppError('invalid', code, 'project_user_id must be 1 to 255 characters without control characters');
  return {
    projectUserId: input.project_user_id,
    properties: parseTriggerProperties(input.properties, 'properties', code),
  };
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
  const { projectUserId, properties } = parsePreviewInput(input);
  const campaign = await findCampaign(deps.db, projectId, campaignId);
  if (!campaign) throw new AppError('not_found', 'CAMPAIGN_NOT_FOUND', `Campaign ${campaignId} does not exist`);
  const user = await findUser(deps.db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);

  const required = triggerPropertiesRequiredBy(
    campaign.audienceConditions,
    triggerPropertiesRequiredByMessage(parseMessageTemplate(campaign.message)),
  );
  const missing = [...required].filter((name) => !Object.hasOwn(properties, name)).sort();
  const trigger = { ...properties };
  for (const name of missing) trigger[name] = `{{trigger.${name}}}`;

  const [outcome] = await deps.templates.render(
    campaign.message,
    [
      {
        trigger,
        user: { ...user.properties, project_user_id: user.projectUserId },
        campaign: { campaign_id: campaign.campaignId, name: campaign.name },
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
  };
}
