import { Type } from '@sinclair/typebox';

export const MIN_SENDS_PER_MINUTE = 60;
export const MAX_SENDS_PER_MINUTE = 1_000_000;

/** The campaign fields of rules `quiet-hours` and `send-rate-limits` (checked again by the service, with messages). */
export const campaignPolicyFields = {
  quiet_hours: Type.Unknown({
    description:
      'Quiet hours in each user\'s time zone (rule `quiet-hours`): {"start": "HH:MM", "end": "HH:MM"}, null for the project\'s default, or false for none. Sends inside are held until the window ends.',
    examples: [{ start: '21:00', end: '08:00' }, null, false],
  }),
  max_sends_per_minute: Type.Union(
    [Type.Integer({ minimum: MIN_SENDS_PER_MINUTE, maximum: MAX_SENDS_PER_MINUTE }), Type.Null()],
    {
      description: `At most this many sends per minute over all instances (rule \`send-rate-limits\`), ${MIN_SENDS_PER_MINUTE} to ${MAX_SENDS_PER_MINUTE}; null for no limit`,
      examples: [6000],
    },
  ),
};
