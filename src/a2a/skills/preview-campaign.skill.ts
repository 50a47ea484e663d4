import { Type } from '@sinclair/typebox';
import { AppError } from '../../errors.js';
import { parsePreviewInput, previewCampaign } from '../../campaigns/analytics/campaign-preview.service.js';
import type { JsonObject } from '../model.js';
import { invalidParams, paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  campaignId: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$' }),
  projectUserId: Type.String({ minLength: 1, maxLength: 255 }),
  properties: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  locale: Type.Optional(Type.String({ maxLength: 64 })),
});
const check = paramsValidator(Input);

export interface PreviewSkillInput {
  campaignId: string;
  body: { project_user_id: string; properties?: unknown; locale?: string };
}

/**
 * `preview-campaign` {campaignId, projectUserId, properties?, locale?} → `preview-result` {title, body,
 * imageUrl?, landingUrl?, payloads, warnings, locale}: the REST `:preview` answer in camelCase (the
 * provider payloads are the providers' own JSON and stay as they are). Nothing is stored or sent.
 */
export const previewCampaignSkill = defineSkill<PreviewSkillInput>({
  descriptor: {
    id: 'preview-campaign',
    name: 'Preview campaign',
    description:
      "Renders a campaign's message for one user with the given trigger properties, as a trigger would (in the user's locale, or in `locale` if given), and answers each push provider's payload with its size against that provider's limit, and the trigger properties the campaign reads but the preview lacks. Sends nothing.",
    tags: ['campaigns'],
    examples: [
      '{"skill":"preview-campaign","campaignId":"welcome","projectUserId":"user-42","properties":{"coupon":"SPRING"}}',
    ],
  },
  parse(data, field) {
    const input = check(data, field);
    const body = {
      project_user_id: input.projectUserId,
      ...(input.properties !== undefined ? { properties: input.properties } : {}),
      ...(input.locale !== undefined ? { locale: input.locale } : {}),
    };
    try {
      parsePreviewInput(body); // the REST rules, so a malformed preview never becomes a task
    } catch (error) {
      if (error instanceof AppError && error.kind === 'invalid')
        throw invalidParams([{ field, description: error.message }], `Invalid preview: ${error.message}`);
      throw error;
    }
    return { campaignId: input.campaignId, body };
  },
  async run({ deps, db, projectId }, input) {
    const preview = await previewCampaign(
      { db, templates: deps.templates, clock: deps.clock },
      projectId,
      input.campaignId,
      input.body,
    );
    const data: JsonObject = {
      title: preview.title,
      body: preview.body,
      ...(preview.image_url !== undefined && { imageUrl: preview.image_url }),
      ...(preview.landing_url !== undefined && { landingUrl: preview.landing_url }),
      payloads: preview.payloads,
      warnings: preview.warnings,
      locale: { userLocale: preview.locale.user_locale, messageLocale: preview.locale.message_locale },
    };
    return { artifactName: 'preview-result', data };
  },
});
