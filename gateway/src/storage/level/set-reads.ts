/**
 * Reads of a LevelDB replica's sets (see `ReplicaSets` in `../set-replica.ts`), each returning
 * what it found with the stamp of the same state:
 * - `has`: the element's keys (one seek on an open iterator, `element-seeker.ts`, whatever the
 *   set's size) with the head from the head cache, which proves the seek saw the state the head
 *   describes (`set-head-cache.ts`); when the set is not cached, or a commit touched it
 *   meanwhile, both from one snapshot;
 * - `size`: the head, from the cache or the store;
 * - `scan` and `stream`: the head and a walk of the element keys from one snapshot. A scan hands
 *   the covered keys it walks over to compaction.
 */
import {
  scanEntries,
  scanRange,
  type BigsetKeys,
  type ElementKey,
  type SetEntry,
} from '@causeway/core'
import type {
  SetMembership,
  SetReplicaStream,
  SetScan,
  SetScanOptions,
  SetSize,
  SetStamp,
} from '../set-replica.js'
import { SnapshotKv, elementKeys, elementRange, levelSetKeys, liveDots } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import { ElementSeeker } from './element-seeker.js'
import type { SetHeadCache } from './set-head-cache.js'
import { readHead, type SetHead } from './set-head.js'

/** Options of {@link SetReads}. */
export interface SetReadsOptions {
  db: StringLevel
  regions: number
  cache: SetHeadCache
  /** Told about each covered key a scan walks over. */
  onCovered: (name: string, keys: BigsetKeys, key: ElementKey) => void
}

/** The reads of one replica's sets. */
export class SetReads {
  readonly #db: StringLevel
  readonly #regions: number
  readonly #cache: SetHeadCache
  readonly #onCovered: SetReadsOptions['onCovered']
  readonly #seeker: ElementSeeker

  constructor(options: SetReadsOptions) {
    this.#db = options.db
    this.#regions = options.regions
    this.#cache = options.cache
    this.#onCovered = options.onCovered
    this.#seeker = new ElementSeeker(options.db, options.cache)
  }

  /** A commit was written: iterators too old to keep are closed. */
  committed(): void {
    this.#seeker.prune()
  }

  /** The replica closes: so do the iterators. */
  close(): void {
    this.#seeker.close()
  }

  /** The element's live dots and the stamp, of one state. */
  async has(name: string, element: string): Promise<SetMembership> {
    const cached = this.#cache.get(name)
    if (cached !== undefined) {
      const { head, since } = cached
      const stored = await this.#seeker.keys(elementRange(head.keys, element), since)
      if (this.#cache.holds(name, head)) return membership(head, stored)
    }
    const keys = levelSetKeys(name)
    const token = this.#cache.token()
    const snapshot = this.#db.snapshot()
    try {
      const [atSnapshot, stored] = await Promise.all([
        readHead(this.#db, keys, this.#regions, snapshot),
        elementKeys(this.#db, elementRange(keys, element), snapshot),
      ])
      this.#cache.remember(name, atSnapshot, token)
      return membership(atSnapshot, stored)
    } finally {
      await snapshot.close()
    }
  }

  /** The element count and the stamp. */
  async size(name: string): Promise<SetSize> {
    let head = this.#cache.get(name)?.head
    if (head === undefined) {
      const token = this.#cache.token()
      head = await readHead(this.#db, levelSetKeys(name), this.#regions)
      this.#cache.remember(name, head, token)
    }
    return { size: head.size, stamp: copyStamp(head.stamp) }
  }

  /** The entries in order, from one snapshot; the stamp covers what the iteration returned. */
  scan(name: string, options: SetScanOptions = {}): SetScan {
    const keys = levelSetKeys(name)
    scanRange(keys, options) // validates from/after before anything is opened
    let stamp: SetStamp | undefined
    const walk = async function* (this: SetReads): AsyncGenerator<SetEntry> {
      const snapshot = this.#db.snapshot()
      try {
        const head = await readHead(this.#db, keys, this.#regions, snapshot)
        stamp = head.stamp
        const onCovered = (k: ElementKey) => this.#onCovered(name, keys, k)
        const kv = new SnapshotKv(this.#db, snapshot)
        yield* scanEntries(kv, keys, head.clocks.tombstone, { ...options, onCovered })
      } finally {
        await snapshot.close()
      }
    }
    return {
      [Symbol.asyncIterator]: () => walk.call(this),
      // Not iterated: the stamp as of now covers the nothing it returned.
      stamp: async () => copyStamp(stamp ?? (await this.size(name)).stamp),
    }
  }

  /** The set-clock and the entries in order, from one snapshot, for a merge of replicas. */
  async stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'> = {},
  ): Promise<SetReplicaStream> {
    const keys = levelSetKeys(name)
    const snapshot = this.#db.snapshot()
    try {
      const head = await readHead(this.#db, keys, this.#regions, snapshot)
      const range = { from: options.from, after: options.after }
      const walk = scanEntries(
        new SnapshotKv(this.#db, snapshot),
        keys,
        head.clocks.tombstone,
        range,
      )
      return {
        clock: head.clocks.clock,
        entries: (async function* () {
          try {
            yield* walk
          } finally {
            await snapshot.close()
          }
        })(),
        stamp: async () => head.stamp,
      }
    } catch (error) {
      await snapshot.close()
      throw error
    }
  }
}

// A copy: a cached head's stamp is shared by every read until the next write.
function copyStamp(stamp: SetStamp): SetStamp {
  return { seen: [...stamp.seen], ts: stamp.ts }
}

function membership(head: SetHead, stored: readonly string[]): SetMembership {
  return { dots: liveDots(head.keys, stored, head.clocks.tombstone), stamp: copyStamp(head.stamp) }
}
