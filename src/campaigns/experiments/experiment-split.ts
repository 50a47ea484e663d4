import type { Recipient } from '../fanout/audience.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import { assignmentPoint, assignVariant, CONTROL, hasExperiment, type Assignment } from './experiment.js';

/** A batch's recipients split by the campaign's experiment (rule `campaign-experiments`). */
export interface ExperimentSplit {
  /** Each recipient's assignment (a variant id, `control`, ...) by user id. */
  assignments: Map<string, Assignment>;
  /** The control group: recorded, sent nothing. */
  control: Recipient[];
  /** Everyone else, each with a variant to receive. */
  rest: Recipient[];
}

/** The user's assignment in the trigger's experiment; undefined when the trigger has none. */
export function assignmentOf(trigger: TriggerRecord, userId: string): Assignment | undefined {
  const experiment = trigger.definition.experiment;
  if (!hasExperiment(experiment)) return undefined;
  return assignVariant(experiment, assignmentPoint(trigger.projectId, trigger.campaignId, userId));
}

/** Splits a batch's recipients; undefined when the trigger has no experiment (everyone gets `message`). */
export function splitRecipients(trigger: TriggerRecord, recipients: Recipient[]): ExperimentSplit | undefined {
  if (!hasExperiment(trigger.definition.experiment)) return undefined;
  const split: ExperimentSplit = { assignments: new Map(), control: [], rest: [] };
  for (const r of recipients) {
    const assignment = assignmentOf(trigger, r.user.id)!;
    split.assignments.set(r.user.id, assignment);
    (assignment === CONTROL ? split.control : split.rest).push(r);
  }
  return split;
}
