import { Type } from '@sinclair/typebox';
import { AppError } from '../../errors.js';
import { explainEligibility, parseEligibilityQuery } from '../../campaigns/eligibility/eligibility.service.js';
import type { JsonObject } from '../model.js';
import { invalidParams, paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  campaignId: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$' }),
  projectUserId: Type.String({ minLength: 1, maxLength: 255 }),
  triggerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
const check = paramsValidator(Input);

export interface ExplainDeliverySkillInput {
  campaignId: string;
  query: { project_user_id: string; trigger_id?: string };
}

/**
 * `explain-delivery` {campaignId, projectUserId, triggerId?} → `eligibility-result` {campaignId,
 * projectUserId, eligible, evaluatedAt, gates: [{gate, verdict, reason, summary, data}]}: the REST
 * `GET .../eligibility` answer in camelCase (each gate's `data` as REST gives it). Reads only.
 */
export const explainDeliverySkill = defineSkill<ExplainDeliverySkillInput>({
  descriptor: {
    id: 'explain-delivery',
    name: 'Explain delivery',
    description:
      "Why a campaign would or would not reach one user now: each gate in order (segment, audience conditions, devices, topic, global opt-out, re-eligibility, frequency caps, quiet hours, rate limit) with its verdict, the skip reason a trigger records, and the data it read. With triggerId, that trigger's conditions and policy. Changes nothing.",
    tags: ['campaigns'],
    examples: [
      '{"skill":"explain-delivery","campaignId":"weekly-digest","projectUserId":"user-42"}',
      '{"skill":"explain-delivery","campaignId":"weekly-digest","projectUserId":"user-42","triggerId":"0192f0c4-6c1e-7d3a-9a51-2b8e4c7f1a20"}',
    ],
  },
  parse(data, field) {
    const input = check(data, field);
    const query = {
      project_user_id: input.projectUserId,
      ...(input.triggerId !== undefined && { trigger_id: input.triggerId }),
    };
    try {
      parseEligibilityQuery(query); // the REST rules, so a malformed question never becomes a task
    } catch (error) {
      if (error instanceof AppError && error.kind === 'invalid')
        throw invalidParams([{ field, description: error.message }], `Invalid explain-delivery: ${error.message}`);
      throw error;
    }
    return { campaignId: input.campaignId, query };
  },
  async run({ deps, db, projectId }, input) {
    const answer = await explainEligibility({ db, clock: deps.clock }, projectId, input.campaignId, input.query);
    const data: JsonObject = {
      campaignId: answer.campaign_id,
      projectUserId: answer.project_user_id,
      eligible: answer.eligible,
      evaluatedAt: answer.evaluated_at,
      gates: answer.gates.map((g) => ({
        gate: g.gate,
        verdict: g.verdict,
        reason: g.reason,
        summary: g.summary,
        data: g.data,
      })),
    };
    return { artifactName: 'eligibility-result', data };
  },
});
