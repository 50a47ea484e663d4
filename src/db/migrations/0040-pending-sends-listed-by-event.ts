import type { AnyKysely } from '../database.js';

/**
 * Pending sends are listed newest first by their event's id (time-ordered, src/lib/ids.ts) through
 * the unique index on (project, campaign, event) that every send already maintains, so the index
 * kept only for listing goes: one b-tree fewer written per pending send, in the transaction that
 * stores its event (docs/benchmarks.md, event ingestion).
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.dropIndex('event_pending_sends_list').execute();
}
