/**
 * The local store of one device: four sublevels of the app's abstract-level database (meta,
 * outbox, failed, cache), JSON values, and every change made as one atomic batch across them, so
 * a crash leaves an operation either queued whole or not at all, and an applied one removed
 * together with the cache and session it updated.
 *
 * Writes are group-committed: every change asked for while a batch is being written joins the
 * next one (what the gateway's replicas do per event-loop turn), so many writes at once cost a
 * few batches rather than one each. A failed batch fails every change in it with `STORAGE_FULL`
 * and leaves the store as it was: abstract-level batches are atomic.
 */
import { CausewayError, StorageFullError } from '@causeway/core'
import type { PersistBatchOp, PersistStore, PersistSublevel, StoredOp } from './outbox-types.js'

/** One change: put or delete `key` of a sublevel (by name). */
export type StoreChange =
  | { type: 'put'; in: SublevelName; key: string; value: unknown }
  | { type: 'del'; in: SublevelName; key: string }

export type SublevelName = 'meta' | 'outbox' | 'failed' | 'cache'

interface Waiting {
  changes: StoreChange[]
  resolve(): void
  reject(error: unknown): void
}

/** The device's state as it was persisted. */
export interface StoredState {
  device: string | undefined
  topology: unknown
  url: string | undefined
  session: unknown
}

/** Names the store error a write of the local store hit, as STORAGE_FULL. */
export function storageFull(cause: unknown): StorageFullError {
  const e = cause as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown }
  const inner = e?.cause as { name?: unknown } | undefined
  const quota = e?.name === 'QuotaExceededError' || inner?.name === 'QuotaExceededError'
  // IndexedDB's QuotaExceededError comes with an empty message in Chromium: name it then.
  const why =
    typeof e?.message === 'string' && e.message !== ''
      ? e.message
      : typeof e?.name === 'string'
        ? e.name
        : String(cause)
  return new StorageFullError(
    quota
      ? `the local store is full (quota exceeded): ${why}`
      : `the local store refused the write: ${why}`,
    { storeCode: typeof e?.code === 'string' ? e.code : undefined, quota },
    { cause },
  )
}

/** The local store over an abstract-level database. */
export class LocalStore {
  readonly db: PersistStore
  readonly #levels: Record<SublevelName, PersistSublevel>
  #queue: Waiting[] = []
  #writing: Promise<void> | undefined

  constructor(db: PersistStore) {
    this.db = db
    const json = { keyEncoding: 'utf8', valueEncoding: 'json' } as const
    const root = db.sublevel('causeway', json) as unknown as PersistStore
    this.#levels = {
      meta: root.sublevel('meta', json),
      outbox: root.sublevel('outbox', json),
      failed: root.sublevel('failed', json),
      cache: root.sublevel('cache', json),
    }
  }

  /** Opens the database (a no-op when it is open). */
  async open(): Promise<void> {
    try {
      if (this.db.status !== 'open') await this.db.open()
    } catch (cause) {
      throw new CausewayError(
        'INVALID_OPTION',
        `cannot open the local store: ${(cause as Error)?.message ?? String(cause)}`,
        undefined,
        { cause },
      )
    }
  }

  /** The persisted meta fields. */
  async loadState(): Promise<StoredState> {
    const [device, topology, url, session] = await this.#levels.meta.getMany([
      'device',
      'topology',
      'url',
      'session',
    ])
    return {
      device: typeof device === 'string' ? device : undefined,
      topology,
      url: typeof url === 'string' ? url : undefined,
      session,
    }
  }

  /** One value of a sublevel, or undefined. */
  get(level: SublevelName, key: string): Promise<unknown> {
    return this.#levels[level].get(key)
  }

  getMany(level: SublevelName, keys: string[]): Promise<unknown[]> {
    return this.#levels[level].getMany(keys)
  }

  /** The entries of a sublevel in key order, at most `limit`, after `after` when given. */
  async entries(
    level: SublevelName,
    options: { limit?: number; after?: string; reverse?: boolean } = {},
  ): Promise<[string, unknown][]> {
    const out: [string, unknown][] = []
    const range: { gt?: string; limit?: number; reverse?: boolean } = {}
    if (options.after !== undefined) range.gt = options.after
    if (options.limit !== undefined) range.limit = options.limit
    if (options.reverse === true) range.reverse = true
    const it = this.#levels[level].iterator(range)
    try {
      for await (const entry of it) out.push(entry)
    } finally {
      await it.close()
    }
    return out
  }

  /** The queued ops in order, at most `limit`. */
  async outbox(limit?: number): Promise<StoredOp[]> {
    const rows = await this.entries('outbox', limit === undefined ? {} : { limit })
    return rows.map(([, op]) => op as StoredOp)
  }

  /**
   * Applies `changes` atomically, with whatever else is asked for meanwhile. Rejects with
   * `STORAGE_FULL` when the store refuses the batch; then none of it was written.
   */
  commit(changes: StoreChange[]): Promise<void> {
    if (changes.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ changes, resolve, reject })
      if (this.#writing === undefined) this.#writing = this.#drain()
    })
  }

  /** Resolves once everything asked for so far is written (or failed). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing
  }

  async #drain(): Promise<void> {
    // Let the calls of this turn join the first batch.
    await Promise.resolve()
    while (this.#queue.length > 0) {
      const group = this.#queue
      this.#queue = []
      const ops: PersistBatchOp[] = []
      for (const w of group)
        for (const c of w.changes)
          ops.push(
            c.type === 'put'
              ? { type: 'put', key: c.key, value: c.value, sublevel: this.#levels[c.in] }
              : { type: 'del', key: c.key, sublevel: this.#levels[c.in] },
          )
      try {
        await this.db.batch(ops)
        for (const w of group) w.resolve()
      } catch (cause) {
        // The batch is atomic: nothing of it was written. Those that did not cause it (all but
        // one, often) get the same error: their changes are lost with it, and they say so.
        const error = storageFull(cause)
        for (const w of group) w.reject(error)
      }
    }
    this.#writing = undefined
  }
}
