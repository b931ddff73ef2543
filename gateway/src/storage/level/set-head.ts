/**
 * The head of a set in a LevelDB replica: everything a write plans against and a read reports
 * besides the element keys. Under core's keys: the set-clock and set-tombstone (core's clock
 * codec), the exact element count (core's size codec, ASCII decimal) and the stamp (JSON
 * `{ seen, ts }`, see `../set-replica.ts`). Read together in one `getMany`, so they agree.
 */
import {
  decodeClock,
  decodeSetSize,
  encodeSetSize,
  type BigsetClocks,
  type BigsetKeys,
} from '@causeway/core'
import type { AbstractSnapshot } from 'abstract-level'
import { emptyStamp, type SetStamp } from '../set-replica.js'
import { fromStoreString, toStoreString, type StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'

/** A set's head (immutable: a commit makes a new one). */
export interface SetHead {
  readonly keys: BigsetKeys
  readonly clocks: BigsetClocks
  /** The number of elements. */
  readonly size: number
  readonly stamp: SetStamp
}

/** Reads the head of the set of `keys`, at `snapshot` when given; a new set has a fresh one. */
export async function readHead(
  db: StringLevel,
  keys: BigsetKeys,
  regions: number,
  snapshot?: AbstractSnapshot,
): Promise<SetHead> {
  const [clock, tombstone, size, stamp] = await db.getMany(
    [keys.clock, keys.tombstone, keys.size, keys.stamp].map(toStoreString),
    snapshot === undefined ? {} : { snapshot },
  )
  return {
    keys,
    clocks: {
      clock: decodeClock(fromStoreString(clock)),
      tombstone: decodeClock(fromStoreString(tombstone)),
    },
    size: decodeSetSize(fromStoreString(size)),
    stamp: decodeStamp(stamp, regions),
  }
}

/** The writes of a head's count and stamp (its clocks are written by core's plans). */
export function countAndStampOps(head: SetHead): Extract<StoreOp, { type: 'put' }>[] {
  return [
    {
      type: 'put',
      key: toStoreString(head.keys.size),
      value: toStoreString(encodeSetSize(head.size)),
    },
    { type: 'put', key: toStoreString(head.keys.stamp), value: JSON.stringify(head.stamp) },
  ]
}

// The stamp as stored (ASCII JSON, so its store string is its text), fitted to `regions`.
function decodeStamp(text: string | undefined, regions: number): SetStamp {
  if (text === undefined) return emptyStamp(regions)
  const parsed = JSON.parse(text) as SetStamp
  const seen = new Array<number>(regions).fill(0)
  parsed.seen.forEach((idx, d) => {
    if (d < regions) seen[d] = idx
  })
  return { seen, ts: parsed.ts }
}
