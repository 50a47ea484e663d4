import type { Recipient } from '../fanout/audience.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import {
  assignmentPoint,
  assignVariant,
  AWAITING_WINNER,
  CONTROL,
  hasExperiment,
  NO_WINNER,
  type Assignment,
} from './experiment.js';

/** A batch's recipients split by the campaign's experiment (rule `campaign-experiments`). */
export interface ExperimentSplit {
  /** Each recipient's assignment (a variant id, `control`, ...) by user id. */
  assignments: Map<string, Assignment>;
  /** The control group: recorded, sent nothing. */
  control: Recipient[];
  /** Outside a winner rule's test slice, before the decision: held until the test ends. */
  waiting: Recipient[];
  /** Outside the test slice, decided with no winner and fallback `none`: recorded, sent nothing. */
  noWinner: Recipient[];
  /** Everyone else, each with a variant to receive. */
  rest: Recipient[];
}

/** The user's assignment in the trigger's experiment; undefined when the trigger has none. */
export function assignmentOf(trigger: TriggerRecord, userId: string): Assignment | undefined {
  const experiment = trigger.definition.experiment;
  if (!hasExperiment(experiment)) return undefined;
  const decided = trigger.definition.winnerDecision;
  return assignVariant(
    experiment,
    assignmentPoint(trigger.projectId, trigger.campaignId, userId),
    decided ? decided.variant_id : undefined,
  );
}

/** Splits a batch's recipients; undefined when the trigger has no experiment (everyone gets `message`). */
export function splitRecipients(trigger: TriggerRecord, recipients: Recipient[]): ExperimentSplit | undefined {
  if (!hasExperiment(trigger.definition.experiment)) return undefined;
  const split: ExperimentSplit = { assignments: new Map(), control: [], waiting: [], noWinner: [], rest: [] };
  const to: Record<string, Recipient[]> = {
    [CONTROL]: split.control,
    [AWAITING_WINNER]: split.waiting,
    [NO_WINNER]: split.noWinner,
  };
  for (const r of recipients) {
    const assignment = assignmentOf(trigger, r.user.id)!;
    split.assignments.set(r.user.id, assignment);
    (Object.hasOwn(to, assignment) ? to[assignment]! : split.rest).push(r);
  }
  return split;
}
