import type { Db } from '../../db/database.js';
import { activeDevicesOfUserIds, deviceOwners, type Device } from '../../devices/devices.service.js';
import * as repo from './audience.repository.js';
import { compileCondition } from '../../conditions/compile-condition.js';
import { emptyCounters, type TriggerCounters } from '../triggers/trigger-counters.js';
import type { TriggerDefinition } from '../triggers/triggers.repository.js';
import type { Target } from '../triggers/trigger-body.js';
import { unsubscribedUsers } from '../../preferences/subscription-gate.js';

export type { AudienceUser } from './audience.repository.js';

/** One user who gets the message, with the devices it goes to. */
export interface Recipient {
  user: repo.AudienceUser;
  devices: Device[];
}

export type TargetVerdict =
  'eligible' | 'not_found' | 'not_in_segment' | 'audience_conditions' | 'unsubscribed' | 'no_device';

export interface TargetResult {
  target: Target;
  verdict: TargetVerdict;
  /** The resolved user, when the target names one that exists. */
  userId?: string;
  devices: number;
}

export interface AudienceSlice {
  recipients: Recipient[];
  counters: TriggerCounters;
  targets?: TargetResult[];
}

export type CompiledConditions = ReturnType<typeof compileTriggerConditions>;

/**
 * The users of one wave of a local-time trigger (rule `local-time-triggers`): the others are left
 * out of the slice, counters included. A target that names no user is counted by the first wave only.
 */
export interface WaveFilter {
  keep: (user: repo.AudienceUser) => boolean;
  countsUnresolved: boolean;
}

/**
 * The segment (always enforced) and the trigger's audience conditions, as SQL over `users`, and the
 * subscription gate its eligible users then pass (rule `subscription-topics`).
 */
export function compileTriggerConditions(
  db: Db,
  definition: Pick<TriggerDefinition, 'segment' | 'audienceConditions' | 'topic' | 'policy'>,
  now: number,
) {
  return {
    segment: compileCondition(db, definition.segment, { now }),
    audience: compileCondition(db, definition.audienceConditions, { now }),
    // A critical campaign (rule `frequency-caps`) reaches users whatever their topics, never past the global opt-out.
    subscription: { topic: definition.topic ?? null, bypassTopics: definition.policy?.critical ?? false },
  };
}

function groupByUser(users: repo.AudienceUser[], devices: Device[]): Recipient[] {
  const byUser = new Map<string, Device[]>();
  for (const d of devices) byUser.set(d.userId, [...(byUser.get(d.userId) ?? []), d]);
  return users.filter((u) => byUser.has(u.id)).map((user) => ({ user, devices: byUser.get(user.id)! }));
}

/** One broadcast range: the segment's users in it, as they are now, and their devices as of the snapshot. */
export async function broadcastSlice(
  db: Db,
  projectId: string,
  range: { after: string | null; upto: string | null },
  snapshotAt: number,
  c: CompiledConditions,
  wave?: WaveFilter,
): Promise<AudienceSlice> {
  const read = await repo.segmentUsersInRange(db, projectId, range, snapshotAt, c);
  // A local-time trigger's wave counts and sends to its own users only.
  const users = wave ? read.filter(wave.keep) : read;
  const eligible = users.filter((u) => u.eligible);
  const unsubscribed = await unsubscribedUsers(
    db,
    projectId,
    eligible.map((u) => u.id),
    c.subscription,
  );
  const subscribed = eligible.filter((u) => !unsubscribed.has(u.id));
  const devices = await activeDevicesOfUserIds(db, new Map(subscribed.map((u) => [u.id, u.projectUserId])), snapshotAt);
  const recipients = groupByUser(subscribed, devices);
  const counters = emptyCounters();
  counters.in_segment = users.length;
  counters.eligible = eligible.length;
  counters.devices = recipients.reduce((n, r) => n + r.devices.length, 0);
  if (users.length > eligible.length) counters.skipped.audience_conditions = users.length - eligible.length;
  if (unsubscribed.size > 0) counters.skipped.unsubscribed = unsubscribed.size;
  if (subscribed.length > recipients.length) counters.skipped.no_device = subscribed.length - recipients.length;
  return { recipients, counters };
}

/**
 * A targeted audience (rule `trigger-body`): each target resolved to its user (a device target to the device's
 * user) and judged against the segment and the audience conditions. A user target reaches every
 * active device of the user, a device target that device only; a device reached twice is sent once.
 */
export async function targetsSlice(
  db: Db,
  projectId: string,
  targets: Target[],
  c: CompiledConditions,
  wave?: WaveFilter,
): Promise<AudienceSlice> {
  const of = <K extends 'project_user_id' | 'user_id' | 'device_id'>(key: K) =>
    targets.flatMap((t) => (key in t ? [(t as Record<K, string>)[key]] : []));
  const targetDevices = new Map((await deviceOwners(db, projectId, of('device_id'))).map((d) => [d.deviceId, d]));
  const users = await repo.usersByIds(
    db,
    projectId,
    {
      projectUserIds: of('project_user_id'),
      userIds: [...of('user_id'), ...[...targetDevices.values()].map((d) => d.userId)],
    },
    c,
  );
  const byId = new Map(users.map((u) => [u.id, u]));
  const byProjectUserId = new Map(users.map((u) => [u.projectUserId, u]));
  const unsubscribed = await unsubscribedUsers(
    db,
    projectId,
    users.filter((u) => u.eligible).map((u) => u.id),
    c.subscription,
  );
  const eligible = users.filter((u) => u.eligible && !unsubscribed.has(u.id));
  const devicesOf = new Map<string, Device[]>();
  for (const d of await activeDevicesOfUserIds(db, new Map(eligible.map((u) => [u.id, u.projectUserId]))))
    devicesOf.set(d.userId, [...(devicesOf.get(d.userId) ?? []), d]);

  const counters = emptyCounters();
  const chosen = new Map<string, Device>();
  const results = targets.flatMap((target): TargetResult[] => {
    const device = 'device_id' in target ? targetDevices.get(target.device_id) : undefined;
    const user =
      'project_user_id' in target
        ? byProjectUserId.get(target.project_user_id)
        : 'user_id' in target
          ? byId.get(target.user_id)
          : device && byId.get(device.userId);
    if (wave && (user ? !wave.keep(user) : !wave.countsUnresolved)) return [];
    const verdict = (v: TargetVerdict, devices: Device[] = []): TargetResult[] => {
      if (v !== 'eligible') counters.skipped[v] = (counters.skipped[v] ?? 0) + 1;
      if (v !== 'not_found' && v !== 'not_in_segment') counters.in_segment += 1;
      if (v === 'eligible' || v === 'no_device' || v === 'unsubscribed') counters.eligible += 1;
      for (const d of devices) chosen.set(d.deviceId, d);
      return [{ target, verdict: v, ...(user && { userId: user.id }), devices: devices.length }];
    };
    if (!user) return verdict('not_found');
    if (!user.inSegment) return verdict('not_in_segment');
    if (!user.eligible) return verdict('audience_conditions');
    if (unsubscribed.has(user.id)) return verdict('unsubscribed');
    const all = devicesOf.get(user.id) ?? [];
    const devices = 'device_id' in target ? all.filter((d) => d.deviceId === target.device_id) : all;
    return devices.length === 0 ? verdict('no_device') : verdict('eligible', devices);
  });
  counters.targets = results.length;
  counters.devices = chosen.size;
  return { recipients: groupByUser(eligible, [...chosen.values()]), counters, targets: results };
}
