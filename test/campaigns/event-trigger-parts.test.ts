import { describe, expect, it } from 'vitest';
import { triggerParts } from '../../src/campaigns/event-triggers/fire-pending-sends.job.js';
import type { PendingSend } from '../../src/campaigns/event-triggers/pending-sends.repository.js';

const send = (id: string, userId: string, properties: Record<string, unknown> = {}): PendingSend => ({
  id,
  projectId: 'p',
  campaignId: 'c',
  userId,
  eventId: `e-${id}`,
  eventName: 'cart_abandoned',
  eventProperties: properties,
  eventTimestamp: 0,
  dueAt: 0,
  state: 'pending',
  reason: null,
  triggerId: null,
  createdAt: 0,
  updatedAt: 0,
});

const ids = (parts: PendingSend[][]) => parts.map((p) => p.map((s) => s.id));

describe('triggerParts: how one claim of a campaign is split into triggers', () => {
  it('puts distinct users in one trigger and a second send of a user in the next', () => {
    const parts = triggerParts([send('a', 'u1'), send('b', 'u2'), send('c', 'u1'), send('d', 'u1'), send('e', 'u3')]);
    expect(ids(parts)).toEqual([['a', 'b', 'e'], ['c'], ['d']]);
  });

  it('starts another trigger when the events carried would pass the size bound, but never leaves one empty', () => {
    const big = { text: 'x'.repeat(100) };
    const parts = triggerParts([send('a', 'u1', big), send('b', 'u2', big), send('c', 'u3', big)], 250);
    expect(ids(parts)).toEqual([['a', 'b'], ['c']]);
    expect(ids(triggerParts([send('a', 'u1', { text: 'y'.repeat(1000) })], 250))).toEqual([['a']]);
  });
});
