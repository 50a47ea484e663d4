import { Type } from '@sinclair/typebox';
import { trackEvents } from '../../events/events.service.js';
import { EventName, EventTimestamp } from '../../events/events.schemas.js';
import { Properties, ProjectUserId } from '../../users/users.schemas.js';
import { paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  projectUserId: ProjectUserId,
  eventName: EventName,
  properties: Type.Optional(Properties),
  timestamp: Type.Optional(EventTimestamp),
});
const check = paramsValidator(Input);

/** `track-event` {projectUserId, eventName, properties?, timestamp?} → `event-result` (rules `a2a-skills` and `events`). */
export const trackEventSkill = defineSkill({
  descriptor: {
    id: 'track-event',
    name: 'Track event',
    description:
      'Records one event of a user (the user is created if absent); timestamp is ISO 8601 or epoch milliseconds, default now.',
    tags: ['events'],
    examples: ['{"skill":"track-event","projectUserId":"user-42","eventName":"purchase","properties":{"amount":30}}'],
  },
  parse: (data, field) => check(data, field),
  async run({ deps, db, projectId }, input) {
    const [event] = await trackEvents(
      db,
      deps.clock,
      projectId,
      [
        {
          project_user_id: input.projectUserId,
          name: input.eventName,
          ...(input.properties ? { properties: input.properties } : {}),
          ...(input.timestamp !== undefined ? { timestamp: input.timestamp } : {}),
        },
      ],
      deps.observeEvents,
    );
    return {
      artifactName: 'event-result',
      data: {
        eventId: event!.eventId,
        projectUserId: event!.projectUserId,
        eventName: event!.name,
        timestamp: new Date(event!.timestamp).toISOString(),
      },
    };
  },
});
