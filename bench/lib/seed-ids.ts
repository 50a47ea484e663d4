import { newTimeOrderedId } from '../../src/lib/ids.js';

/**
 * The id of seeded user `i` of `n`, as Herald would have made it (src/lib/ids.ts): time-ordered, the
 * users a millisecond apart and the last one just before `at`. Random UUIDs would put every user on a
 * random page of the primary key, which no user created through Herald is.
 */
export const seededUserId = (i: number, n: number, at: number): string => newTimeOrderedId(at - n + i);
