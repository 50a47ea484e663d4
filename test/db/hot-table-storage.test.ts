import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

// The storage settings of the tables rewritten all day (migration 0049, docs/operations.md "Vacuum"),
// which an operator would otherwise set by hand. PostgreSQL has them; on SQLite the migration is a no-op.
describe.each(TEST_DIALECTS)('hot-table storage settings on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('vacuums the queue, the buckets and the counters after a fixed number of dead rows, with room for HOT updates', async () => {
    const db = ctx().herald.db;
    const applied = await sql<{
      name: string;
    }>`select name from kysely_migration where name = '0049-hot-table-storage'`.execute(db);
    expect(applied.rows).toHaveLength(1);
    if (dialect === 'sqlite') return;
    const { rows } = await sql<{ relname: string; reloptions: string[] | null }>`
      select c.relname, c.reloptions from pg_class c
      where c.relnamespace = current_schema()::regnamespace
        and c.relname in ('jobs', 'rate_limit_buckets', 'campaign_send_rates', 'trigger_delivery_counts')
      order by c.relname`.execute(db);
    const options = Object.fromEntries(rows.map((r) => [r.relname, r.reloptions ?? []]));
    expect(Object.keys(options)).toEqual([
      'campaign_send_rates',
      'jobs',
      'rate_limit_buckets',
      'trigger_delivery_counts',
    ]);
    for (const [table, set] of Object.entries(options))
      expect(set, table).toContain('autovacuum_vacuum_scale_factor=0');
    expect(options.jobs!.some((o) => o.startsWith('fillfactor'))).toBe(false);
    expect(options.jobs).toContain('autovacuum_vacuum_threshold=1000');
    expect(options.rate_limit_buckets).toContain('fillfactor=50');
    expect(options.campaign_send_rates).toContain('fillfactor=50');
    expect(options.trigger_delivery_counts).toContain('fillfactor=70');
  });
});
