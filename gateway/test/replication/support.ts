/** Replicas and links for the replication tests: in memory, closed after each test. */
import { HLC_ZERO, type ShipEnvelope } from '@causeway/core'
import type { InProcessLink } from '../../src/replication/in-process-link.js'
import type { ShippingLink } from '../../src/replication/shipping-link.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import type { LogEntry } from '../../src/storage/partition-replica.js'

/** Opens in-memory replicas and closes them all in {@link Replicas.closeAll}. */
export class Replicas {
  #open: LevelPartitionReplica[] = []

  async open(
    region: number,
    regions: number,
    replica = 0,
    partition = 0,
  ): Promise<LevelPartitionReplica> {
    const r = new LevelPartitionReplica({ region, partition, replica, regions })
    this.#open.push(r)
    await r.open()
    return r
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#open.splice(0).map((r) => r.close()))
  }
}

/** `count` local writes of distinct keys at `leader`, concurrently. */
export function writeMany(
  leader: LevelPartitionReplica,
  count: number,
  prefix = 'k',
): Promise<LogEntry[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) => leader.write(`${prefix}${i}`, String(i), HLC_ZERO)),
  )
}

/** Resolves once `replica`'s `sv[origin]` reaches `idx`; fails the test after `ms`. */
export async function reach(
  replica: { waitFor(need: readonly number[], deadline: number): Promise<boolean>; sv(): number[] },
  origin: number,
  idx: number,
  ms = 5000,
): Promise<void> {
  const need = replica.sv().map((_, d) => (d === origin ? idx : 0))
  if (!(await replica.waitFor(need, Date.now() + ms))) {
    throw new Error(`sv[${origin}] stayed at ${replica.sv()[origin]}, below ${idx}, for ${ms} ms`)
  }
}

/** A link that records what is sent and fails sends on demand (before they leave). */
export class FlakyLink implements ShippingLink {
  /** Every batch handed to the inner link, as idx lists. */
  readonly sent: number[][] = []
  failures = 0
  /** Decides, per send (counting from 1), whether it fails. */
  failWhen: (send: number) => boolean = () => false
  #sends = 0

  constructor(readonly inner: InProcessLink) {}

  checkpoint(): Promise<number> {
    return this.inner.checkpoint()
  }

  send(envelope: ShipEnvelope): Promise<number> {
    if (this.failWhen(++this.#sends)) {
      this.failures++
      return Promise.reject(new Error(`send ${this.#sends} lost`))
    }
    this.sent.push(envelope.entries.map((e) => e.idx))
    return this.inner.send(envelope)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}

/** Waits `ms`: to spread writes over time, never to wait for state (wait for that instead). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
