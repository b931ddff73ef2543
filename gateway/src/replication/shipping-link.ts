/**
 * How a shipper reaches the leader of its partition in another region. In process for the
 * embedded cluster (`InProcessLink`); later over HTTP or Redis. A link is FIFO: batches reach
 * the destination in the order they were sent, so the shipper may pipeline them.
 */
import type { ShipEnvelope } from '@causeway/core'

/** A FIFO channel from one region's partition leader to the same partition's leader elsewhere. */
export interface ShippingLink {
  /** The destination leader's `sv[origin]`: how far shipping has got (the checkpoint). */
  checkpoint(): Promise<number>
  /**
   * Delivers `envelope` (entries of the origin region, in idx order: `@causeway/core`'s
   * `ship-envelope.ts`) to the destination leader, after every envelope sent before. Resolves to
   * the destination's new checkpoint, which stays below `envelope.last` when an earlier one was
   * lost (a gap).
   */
  send(envelope: ShipEnvelope): Promise<number>
  /** Drops what is in flight; pending calls reject. */
  close(): Promise<void>
}
