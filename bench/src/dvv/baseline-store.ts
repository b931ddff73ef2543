/**
 * The in-memory multi-region store of the `dvv` suite's baseline server, in two modes that differ
 * only in the clock:
 *
 * - `vv`: Riak's objects (`vv-clock.ts`): one client-id version vector per object for all its
 *   values, pruned Riak-style;
 * - `dvv`: a DVVSet per key with the regions as actors (`DvvSet` of `@causeway/core`), exactly
 *   Causeway's scheme, as the control that shows what the store itself costs.
 *
 * A write is coordinated by the region it reaches, which then ships the key's whole object to
 * every other region (as Riak replicates whole objects; Causeway ships the leader's whole set),
 * where it is merged. Plain data, so it can be tested without HTTP.
 */
import { DvvSet, decodeCausalContextBytes, encodeCausalContextBytes } from '@causeway/core'
import {
  EMPTY_OBJECT,
  type VvObject,
  decodeVv,
  encodeVv,
  mergeObjects,
  writeObject,
} from './vv-clock.js'

/** Which clock the store uses. */
export type ClockMode = 'vv' | 'dvv'

/** A key's object, as stored and shipped. */
export type StoredObject = { mode: 'vv'; object: VvObject } | { mode: 'dvv'; set: DvvSet<string> }

/** What a read returns: the values (JSON texts) and the context (binary clock). */
export interface BaselineRead {
  values: string[]
  context: Uint8Array
}

/** A write as a region receives it. */
export interface BaselineWrite {
  value: string
  /** The context of the writer's last read, or undefined for a blind write. */
  context: Uint8Array | undefined
  /** The client's id (the VV actor). */
  client: number
  /** A number the client increases with every write it makes (its VV counter). */
  seq: number
}

/** One region's copy of every key. */
export class BaselineRegion {
  readonly #objects = new Map<string, StoredObject>()

  constructor(
    readonly region: number,
    readonly mode: ClockMode,
    readonly now: () => number = Date.now,
  ) {}

  read(key: string): BaselineRead {
    const object = this.#objects.get(key)
    if (object === undefined)
      return {
        values: [],
        context: this.mode === 'vv' ? encodeVv([]) : encodeCausalContextBytes([]),
      }
    if (object.mode === 'vv')
      return { values: [...object.object.values], context: encodeVv(object.object.clock) }
    return {
      values: DvvSet.values(object.set),
      context: encodeCausalContextBytes(DvvSet.join(object.set)),
    }
  }

  /** Coordinates a write; returns the key's new object, to ship to the other regions. */
  write(key: string, write: BaselineWrite): StoredObject {
    const local = this.#objects.get(key)
    let next: StoredObject
    if (this.mode === 'vv') {
      const context = write.context === undefined ? [] : decodeVv(write.context)
      const stored = local?.mode === 'vv' ? local.object : EMPTY_OBJECT
      const object = writeObject(stored, write.value, context, write.client, write.seq, this.now())
      next = { mode: 'vv', object }
    } else {
      const context = write.context === undefined ? [] : decodeCausalContextBytes(write.context)
      const set = local?.mode === 'dvv' ? local.set : DvvSet.newList<string>([])
      next = {
        mode: 'dvv',
        set: DvvSet.update(DvvSet.new(context, write.value), set, this.region),
      }
    }
    this.#objects.set(key, next)
    return next
  }

  /** Merges an object shipped by another region. */
  receive(key: string, shipped: StoredObject): void {
    const local = this.#objects.get(key)
    if (shipped.mode === 'vv') {
      const stored = local?.mode === 'vv' ? local.object : EMPTY_OBJECT
      this.#objects.set(key, { mode: 'vv', object: mergeObjects(stored, shipped.object) })
    } else {
      const set = local?.mode === 'dvv' ? DvvSet.sync([local.set, shipped.set]) : shipped.set
      this.#objects.set(key, { mode: 'dvv', set })
    }
  }

  /** Every key this region holds. */
  keys(): string[] {
    return [...this.#objects.keys()]
  }
}

/** A cluster of regions that ship every write to each other after `delayMs`. */
export class BaselineCluster {
  readonly regions: BaselineRegion[]
  readonly #delayMs: number
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()

  constructor(regions: number, mode: ClockMode, delayMs: number, now: () => number = Date.now) {
    this.regions = Array.from({ length: regions }, (_, d) => new BaselineRegion(d, mode, now))
    this.#delayMs = delayMs
  }

  /** A write at region `region`, shipped to the others. */
  write(region: number, key: string, write: BaselineWrite): void {
    const object = this.regions[region]!.write(key, write)
    for (const other of this.regions) {
      if (other.region === region) continue
      // Same delay on every link: timers fire in order, so each link is FIFO.
      const timer = setTimeout(() => {
        this.#timers.delete(timer)
        other.receive(key, object)
      }, this.#delayMs)
      this.#timers.add(timer)
    }
  }

  /** Stops shipping (what is in flight is dropped). */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
  }
}
