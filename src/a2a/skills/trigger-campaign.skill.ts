import { Type } from '@sinclair/typebox';
import { AppError } from '../../errors.js';
import { parseTriggerBody } from '../../campaigns/triggers/trigger-body.js';
import { triggerCampaign } from '../../campaigns/triggers/trigger.service.js';
import type { JsonObject } from '../model.js';
import { invalidParams, paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  campaignId: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$' }),
  audience: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  properties: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  schedule: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
const check = paramsValidator(Input);

const TARGET_KEYS: Record<string, string> = {
  projectUserId: 'project_user_id',
  deviceId: 'device_id',
  userId: 'user_id',
};

/** camelCase audience → the REST trigger body's audience (rule `trigger-body`); the trigger service validates it. */
function toRestAudience(audience: JsonObject | undefined, field: string): unknown {
  if (!audience) return undefined;
  const out: JsonObject = { ...audience };
  if (Array.isArray(audience.targets)) {
    out.targets = audience.targets.map((t: unknown, i) => {
      if (typeof t !== 'object' || t === null || Array.isArray(t))
        throw invalidParams([{ field: `${field}.audience.targets[${i}]`, description: 'must be an object' }]);
      return Object.fromEntries(Object.entries(t).map(([k, v]) => [TARGET_KEYS[k] ?? k, v]));
    });
  }
  return out;
}

export interface TriggerSkillInput {
  campaignId: string;
  body: { audience?: unknown; properties?: unknown; schedule?: unknown };
}

/**
 * `trigger-campaign` {campaignId, audience?, properties?, schedule?} → `trigger-result` {triggerId,
 * campaignId} (rule `a2a-skills`); `schedule` is the REST body's (`{"at": "<RFC 3339 instant>"}`, or a
 * local time with `in_local_time`, rule `local-time-triggers`).
 */
export const triggerCampaignSkill = defineSkill<TriggerSkillInput>({
  descriptor: {
    id: 'trigger-campaign',
    name: 'Trigger campaign',
    description:
      'Triggers an API-triggered campaign for its default audience, chosen targets or everyone in its segment (broadcast), with trigger properties for its templates; now, or at schedule.at (an RFC 3339 instant up to a year ahead; the audience is evaluated then), or with schedule.in_local_time at a wall-clock time in each user\'s own time zone (schedule {"at":"2026-12-24T09:00","in_local_time":true,"missed":"skip|send_now|next_day","fallback_time_zone":"Europe/Paris"}, the REST body\'s fields; it goes out in waves over about 26 hours).',
    tags: ['campaigns'],
    examples: [
      '{"skill":"trigger-campaign","campaignId":"welcome","audience":{"targets":[{"projectUserId":"user-42"}]},"properties":{"coupon":"SPRING"}}',
      '{"skill":"trigger-campaign","campaignId":"winter-sale","audience":{"broadcast":true},"schedule":{"at":"2026-12-24T09:00:00+01:00"}}',
      '{"skill":"trigger-campaign","campaignId":"winter-sale","audience":{"broadcast":true},"schedule":{"at":"2026-12-24T09:00","in_local_time":true,"missed":"next_day"}}',
    ],
  },
  parse(data, field) {
    const input = check(data, field);
    const audience = toRestAudience(input.audience, field);
    const body = {
      ...(audience !== undefined ? { audience } : {}),
      ...(input.properties !== undefined ? { properties: input.properties } : {}),
      ...(input.schedule !== undefined ? { schedule: input.schedule } : {}),
    };
    try {
      parseTriggerBody(body); // the REST rules (rule `trigger-body`), so a malformed trigger never becomes a task
    } catch (error) {
      if (error instanceof AppError && error.kind === 'invalid')
        throw invalidParams([{ field, description: error.message }], `Invalid trigger: ${error.message}`);
      throw error;
    }
    return { campaignId: input.campaignId, body };
  },
  async run({ deps, db, projectId }, input) {
    const trigger = await triggerCampaign({ db, clock: deps.clock }, projectId, input.campaignId, input.body);
    return { artifactName: 'trigger-result', data: { triggerId: trigger.triggerId, campaignId: trigger.campaignId } };
  },
});
