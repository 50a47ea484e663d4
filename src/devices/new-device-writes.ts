import type { WarnLog } from '../logger.js';
import type { Db } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { isExpectedFallback, tryOneStatement } from '../db/one-statement.js';
import { RUN_ALONE, sharedStatements } from '../db/shared-statements.js';
import type { Clock } from '../lib/clock.js';
import { ensuredUserParams, withEnsuredUser } from '../users/users.service.js';
import { newDeviceRow, registeredDevice, type Device } from './device-rows.js';
import type { RegisterDeviceBody } from './devices.schemas.js';
import { insertNewDevicesOfEnsuredUsers, type NewDeviceOfUser } from './new-devices.repository.js';
import * as registration from './registration.repository.js';

type NewDeviceInput = RegisterDeviceBody & { device_id: string };

/** The registration of a device id Herald just generated, tried before the transaction (`registerDevice`). */
export interface NewDeviceWrites {
  /** The device as written, or `undefined`, with nothing written, when the transaction must decide. */
  write(projectId: string, input: NewDeviceInput): Promise<Device | undefined>;
}

/**
 * The embedded database: always the transaction, whose group commit shares the commit. (A one-statement
 * try there would take a group commit's turn even when it writes nothing.)
 */
export const newDevicesThroughTransaction: NewDeviceWrites = { write: async () => undefined };

/** Rows of one shared statement at most. */
const MAX_ROWS = 64;

const insertNewDeviceOfEnsuredUser = registration.newDeviceOfEnsuredUser(withEnsuredUser);

/**
 * PostgreSQL, where a statement may hold a write in WITH: the user is ensured and the device inserted
 * in one statement, one round trip instead of a transaction's four; under load, registrations share
 * statements (src/db/shared-statements.ts), rows of distinct push addresses in one. A
 * registration the statement did not write (its user inserted concurrently, a constraint, the database)
 * answers `undefined`, and `registerDevice` runs its transaction, which reaches the same outcome.
 * `log` hears unexpected failures of either statement.
 */
export function sharedNewDeviceWrites(
  db: Db,
  writes: WriteCommitter,
  clock: Clock,
  maxInFlight: number,
  log: WarnLog,
): NewDeviceWrites {
  const alone = (item: NewDeviceOfUser & { input: NewDeviceInput }) =>
    tryOneStatement(
      writes,
      async (statementDb) => {
        const { input, id, projectId, projectUserId, now, ...row } = item;
        const userId = await insertNewDeviceOfEnsuredUser(statementDb, { id, projectId, projectUserId, now }, row);
        return registeredDevice(input, userId, row);
      },
      (error) => log.warn({ err: error }, 'one-statement device registration failed; ran the transaction'),
    );
  const write = sharedStatements<NewDeviceOfUser & { input: NewDeviceInput }, Device | undefined>({
    maxInFlight,
    maxItems: MAX_ROWS,
    // One statement cannot take over one push address twice; a user's devices may share one (it is inserted once).
    keysOf: (item) => [`${item.project_id}\n${item.provider}\n${item.push_address}`],
    alone,
    together: async (items) => {
      const written = new Map(
        (await insertNewDevicesOfEnsuredUsers(db, items)).map((row) => [row.device_id, row.user_id]),
      );
      return items.map((item) => {
        const userId = written.get(item.device_id);
        return userId === undefined ? RUN_ALONE : registeredDevice(item.input, userId, item);
      });
    },
    isExpected: isExpectedFallback,
    unexpected: (error) => log.warn({ err: error }, 'shared device registration failed; ran each alone'),
  });
  return {
    // Bad input throws here, as the transaction's `writeDevice` would (the push address first, then the user id).
    write: (projectId, input) => {
      const row = newDeviceRow(projectId, input, clock.now());
      return write({ ...ensuredUserParams(clock, projectId, input.project_user_id), ...row, input });
    },
  };
}
