import { AppError } from '../../errors.js';
import { triggerPropertiesRequiredBy } from '../../conditions/resolve-trigger-refs.js';
import type { Campaign } from '../campaigns.repository.js';
import { messageReadsScope } from '../templates/template-reads.js';
import { parseMessageTemplate, triggerPropertiesRequiredByMessage } from '../templates/templates.js';
import { parseEventTrigger } from './event-trigger.js';

/**
 * Save-time checks of an event-triggered campaign (rule `event-triggered-campaigns`): `event_trigger`
 * itself; its sends carry no trigger properties, so the message and audience conditions may not
 * need any; and `event.*` may be read only by a campaign an event triggers.
 */
export function checkEventTriggerCampaign(campaign: Campaign): Campaign {
  const parsed = parseMessageTemplate(campaign.message);
  if (campaign.eventTrigger === null) {
    if (messageReadsScope(parsed, 'event'))
      throw new AppError(
        'invalid',
        'INVALID_TEMPLATE',
        'message reads event.*, which only an event-triggered campaign has: give event_trigger, or remove the read',
      );
    return campaign;
  }
  const eventTrigger = parseEventTrigger(campaign.eventTrigger);
  const required = triggerPropertiesRequiredBy(campaign.audienceConditions, triggerPropertiesRequiredByMessage(parsed));
  if (required.size > 0)
    throw new AppError(
      'invalid',
      'INVALID_EVENT_TRIGGER',
      `event_trigger: an event-triggered send has no trigger properties, but the campaign needs ${[...required]
        .sort()
        .map((name) => `trigger.${name}`)
        .join(', ')} (read them through default, or use event.properties)`,
    );
  return { ...campaign, eventTrigger };
}
