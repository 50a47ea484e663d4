import { Type } from '@sinclair/typebox';
import { AppError } from '../../errors.js';
import { cancelCampaignTrigger } from '../../campaigns/triggers/trigger-cancel.service.js';
import type { JsonObject } from '../model.js';
import { paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Id = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$' });
const Input = Type.Object({ campaignId: Id, triggerId: Id });
const check = paramsValidator(Input);

export interface CancelTriggerSkillInput {
  campaignId: string;
  triggerId: string;
}

/**
 * `cancel-trigger` {campaignId, triggerId} → `trigger-result` {triggerId, campaignId, state,
 * counters}: REST `:cancel`. A trigger that already completed or failed ends the task `rejected`
 * saying so; an unknown one `failed`.
 */
export const cancelTriggerSkill = defineSkill<CancelTriggerSkillInput>({
  descriptor: {
    id: 'cancel-trigger',
    name: 'Cancel trigger',
    description:
      'Cancels a scheduled or running campaign trigger: a scheduled one never starts, a running one sends nothing more. What was sent stays sent; the result carries the counters.',
    tags: ['campaigns'],
    examples: [
      '{"skill":"cancel-trigger","campaignId":"winter-sale","triggerId":"0192f0c4-6c1e-7d3a-9a51-2b8e4c7f1a20"}',
    ],
  },
  parse(data, field) {
    const input = check(data, field);
    return { campaignId: input.campaignId, triggerId: input.triggerId };
  },
  async run({ deps, db, projectId }, input) {
    try {
      const status = await cancelCampaignTrigger(
        { db, clock: deps.clock, notices: deps.push.notices },
        projectId,
        input.campaignId,
        input.triggerId,
      );
      const data: JsonObject = {
        triggerId: status.trigger_id,
        campaignId: status.campaign_id,
        state: status.state,
        counters: status.counters,
      };
      return { artifactName: 'trigger-result', data };
    } catch (error) {
      // A finished trigger cannot be canceled: a refusal (`rejected`), not a failure of the skill.
      if (error instanceof AppError && error.kind === 'conflict')
        throw new AppError('refused', error.code, error.message);
      throw error;
    }
  },
});
