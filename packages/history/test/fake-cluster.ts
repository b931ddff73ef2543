/**
 * An in-process stand-in for a multi-region cluster, for testing the recorder and the workload
 * driver without a gateway: each region holds its own copy, writes are stamped by the region's
 * HLC (with an optional clock offset) and shipped to the other regions after `shipDelayMs`, and
 * reads answer from the local copy. It honours no level: with a delay it breaks every session
 * guarantee, and with `shipDelayMs: 'sync'` it is a single linearizable copy that keeps them all.
 */
import { CausewayError, hlcFrom, hlcParts } from '@causeway/core'
import type { KvClient, KvReadResult, KvWriteResult, Version } from '../src/index.js'
import { compareVersions } from '../src/index.js'

interface Entry {
  version: Version
  value: unknown
  deleted: boolean
}

export interface FakeClusterOptions {
  regions: number
  /** One-way delay of shipping between regions, or 'sync' to apply everywhere at once. */
  shipDelayMs: number | 'sync'
  /** Offset of each region's physical clock. */
  clockOffsetsMs?: number[]
  /** Latency of every call, in ms. */
  callMs?: number
}

export class FakeCluster {
  readonly stores: Map<string, Entry>[]
  readonly #clocks: { l: number; c: number }[]
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()
  /** Stop shipping (to test a cluster that never converges). */
  partitioned = false
  /** Make the next reads fail with this code. */
  failReads: string | undefined
  connects = 0

  constructor(readonly options: FakeClusterOptions) {
    this.stores = Array.from({ length: options.regions }, () => new Map())
    this.#clocks = Array.from({ length: options.regions }, () => ({ l: 0, c: 0 }))
  }

  async connect(_options: { url: string }): Promise<KvClient> {
    this.connects++
    const call = async <T>(fn: () => T): Promise<T> => {
      await new Promise((resolve) => setTimeout(resolve, this.options.callMs ?? 1))
      return fn()
    }
    return {
      get: (key, o) =>
        call((): KvReadResult => {
          if (this.failReads) throw new CausewayError(this.failReads as never, 'refused')
          const e = this.stores[o.region]!.get(key)
          if (e === undefined) return { found: false, region: o.region }
          return {
            found: !e.deleted,
            ...(!e.deleted && { value: e.value }),
            ...e.version,
            region: o.region,
          }
        }),
      put: (key, value, o) => call(() => this.#write(key, value, false, o.region)),
      delete: (key, o) => call(() => this.#write(key, undefined, true, o.region)),
      close: async () => {},
    }
  }

  close(): void {
    for (const t of this.#timers) clearTimeout(t)
  }

  #tick(region: number, seen?: string): string {
    const clock = this.#clocks[region]!
    const physical = Date.now() + (this.options.clockOffsetsMs?.[region] ?? 0)
    const other = seen === undefined ? { l: 0, c: 0 } : hlcParts(seen)
    const l = Math.max(clock.l, physical, other.l)
    clock.c = l === clock.l ? clock.c + 1 : l === other.l ? other.c + 1 : 0
    clock.l = l
    return hlcFrom(clock.l, clock.c)
  }

  #write(key: string, value: unknown, deleted: boolean, region: number): KvWriteResult {
    const version = { ts: this.#tick(region), dc: region }
    const entry = { version, value, deleted }
    this.#apply(region, key, entry)
    for (let to = 0; to < this.options.regions; to++) {
      if (to === region) continue
      const ship = () => {
        this.#tick(to, version.ts)
        this.#apply(to, key, entry)
      }
      if (this.options.shipDelayMs === 'sync') ship()
      else if (!this.partitioned) {
        const t = setTimeout(() => {
          this.#timers.delete(t)
          ship()
        }, this.options.shipDelayMs)
        this.#timers.add(t)
      }
    }
    return { ...version, idx: 1, region }
  }

  #apply(region: number, key: string, entry: Entry): void {
    const store = this.stores[region]!
    const now = store.get(key)
    if (now === undefined || compareVersions(entry.version, now.version) > 0) store.set(key, entry)
  }
}
