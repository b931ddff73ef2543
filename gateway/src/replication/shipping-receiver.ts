/**
 * The receiving side of cross-region shipping for one region, as the internal shipping endpoint
 * (`http/routes/internal.ts`) calls it: the region's partition leaders. A deployment serving a
 * region over HTTP implements it (`cluster/redis-cluster.ts`); the embedded cluster ships in
 * process and needs none.
 */
import type { LogEntry, ShipEnvelope } from '@causeway/core'

/** The receiving side of shipping, for one region: its partition leaders. */
export interface ShippingReceiver {
  /** The local leader of `partition`'s `sv[origin]`, read from its store. */
  checkpoint(partition: number, origin: number): Promise<number>
  /**
   * Applies an envelope of another region's entries at the local leader of `partition` (which
   * checks it whole first, `AbstractPartitionReplica.receive`); resolves to the new
   * `sv[envelope.from]`.
   */
  receive(partition: number, envelope: ShipEnvelope): Promise<number>
  /**
   * Up to `limit` of this region's copy of `origin`'s entries of `partition` after `after`, in
   * order: what a new leader of `origin` recovers (`region-log.ts`). Absent: not served.
   */
  readLog?(partition: number, origin: number, after: number, limit: number): Promise<LogEntry[]>
  /**
   * How far this region's leader of `partition` has written (its `sv` of this region, read from
   * its store) and its epoch: what another region checks a read vector against (issue 23.6).
   * Absent: not served.
   */
  written?(partition: number): Promise<{ written: number; epoch: number }>
}
