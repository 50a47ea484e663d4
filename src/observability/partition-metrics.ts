import { Gauge, type Registry } from 'prom-client';

/**
 * `herald_partition_default_rows{table}`: rows of kept days in a partitioned table's default
 * partition after the last retention pass of this worker (PostgreSQL). Above 0 means day partitions
 * could not be made for them: alert on it (docs/operations.md, "PostgreSQL partitions").
 */
export function createPartitionMetrics(registry: Registry): (table: string, rows: number) => void {
  const gauge = new Gauge({
    name: 'herald_partition_default_rows',
    help: "Rows of kept days in a partitioned table's default partition after the last retention pass (should be 0)",
    labelNames: ['table'],
    registers: [registry],
  });
  return (table, rows) => gauge.set({ table }, rows);
}
