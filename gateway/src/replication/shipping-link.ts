/**
 * How a shipper reaches the leader of its partition in another region. In process for the
 * embedded cluster (`InProcessLink`); later over HTTP or Redis. A link is FIFO: batches reach
 * the destination in the order they were sent, so the shipper may pipeline them.
 */
import type { LogEntry } from '../storage/partition-replica.js'

/** A FIFO channel from one region's partition leader to the same partition's leader elsewhere. */
export interface ShippingLink {
  /** The destination leader's `sv[origin]`: how far shipping has got (the checkpoint). */
  checkpoint(): Promise<number>
  /**
   * Delivers `entries` (of the origin region, in idx order) to the destination leader, after every
   * batch sent before. Resolves to the destination's new checkpoint, which stays below the last
   * entry's idx when an earlier batch was lost (a gap).
   */
  send(entries: readonly LogEntry[]): Promise<number>
  /** Drops what is in flight; pending calls reject. */
  close(): Promise<void>
}
