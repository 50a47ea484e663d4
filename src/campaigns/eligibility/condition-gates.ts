import { conditionReads } from '../../conditions/condition-reads.js';
import type { Condition, ResolvedCondition } from '../../conditions/condition-types.js';
import type { GateResult } from './eligibility-gates.js';

/**
 * The segment or audience-conditions gate: the condition, the user's properties it reads (absent
 * ones as null) and the events it counts, with the verdict the fan-out's SQL gave for this user.
 */
export function conditionGate(
  gate: 'segment' | 'audience',
  condition: Condition | ResolvedCondition | null,
  matched: boolean,
  properties: Record<string, unknown>,
  fromTrigger = true,
): GateResult {
  const what = gate === 'segment' ? "the campaign's segment" : "the trigger's audience conditions";
  if (!condition)
    return {
      gate,
      verdict: 'not_applicable',
      reason: null,
      summary:
        gate === 'segment'
          ? 'The campaign has no segment: every user is in it.'
          : fromTrigger
            ? 'The trigger has no audience conditions.'
            : 'No audience conditions apply: they belong to a trigger (pass trigger_id to check one).',
      data: { condition: null },
    };
  const reads = conditionReads(condition);
  const data = {
    condition,
    user_properties: Object.fromEntries(
      [...reads.properties].map((name) => [name, Object.hasOwn(properties, name) ? properties[name] : null]),
    ),
    events: [...reads.events],
  };
  return matched
    ? { gate, verdict: 'pass', reason: null, summary: `The user matches ${what}.`, data }
    : {
        gate,
        verdict: 'fail',
        reason: gate === 'segment' ? 'NOT_IN_SEGMENT' : 'AUDIENCE_CONDITIONS',
        summary: `The user does not match ${what}.`,
        data,
      };
}
