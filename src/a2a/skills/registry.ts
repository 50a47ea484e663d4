import { rpcError } from '../errors.js';
import type { JsonObject, Message } from '../model.js';
import { invalidParams } from '../versions/codec.js';
import { cancelTriggerSkill } from './cancel-trigger.skill.js';
import { createUserSkill } from './create-user.skill.js';
import { explainDeliverySkill } from './explain-delivery.skill.js';
import { getCampaignStatsSkill } from './get-campaign-stats.skill.js';
import { listCampaignsSkill } from './list-campaigns.skill.js';
import { previewCampaignSkill } from './preview-campaign.skill.js';
import { sendPushNotificationSkill } from './send-push-notification.skill.js';
import type { AnySkill } from './skill.js';
import { trackEventSkill } from './track-event.skill.js';
import { triggerCampaignSkill } from './trigger-campaign.skill.js';

export const SKILLS: ReadonlyMap<string, AnySkill> = new Map(
  [
    createUserSkill,
    trackEventSkill,
    sendPushNotificationSkill,
    triggerCampaignSkill,
    previewCampaignSkill,
    explainDeliverySkill,
    cancelTriggerSkill,
    listCampaignsSkill,
    getCampaignStatsSkill,
  ].map((s) => [s.descriptor.id, s]),
);

export interface SkillInvocation {
  skill: AnySkill;
  input: unknown;
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The skill a message asks for: the first part whose `data` names a `skill` (rule `a2a-skills`). No such part, or
 * malformed skill fields: -32602 with details; an unknown skill: -32007. Nothing is stored yet.
 */
export function selectSkill(message: Message): SkillInvocation {
  const index = message.parts.findIndex((p) => isObject(p.data) && 'skill' in p.data);
  if (index < 0)
    throw invalidParams(
      [{ field: 'params.message.parts', description: 'no part has data with a "skill" field' }],
      'Missing skill: a message part must carry data.skill',
    );
  const data = message.parts[index]!.data as JsonObject;
  const field = `params.message.parts[${index}].data`;
  if (typeof data.skill !== 'string' || data.skill === '')
    throw invalidParams([{ field: `${field}.skill`, description: 'must be a skill id' }]);
  const skill = SKILLS.get(data.skill);
  if (!skill)
    throw rpcError(
      'SKILL_NOT_FOUND',
      `Unknown skill "${data.skill.slice(0, 64)}"; skills: ${[...SKILLS.keys()].join(', ')}`,
      { metadata: { skill: data.skill.slice(0, 64) } },
    );
  const { skill: _id, ...fields } = data;
  return { skill, input: skill.parse(fields, field) };
}
