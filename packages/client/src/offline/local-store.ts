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
 *
 * A change that needs no wait (an applied op leaving the outbox) can ride along instead:
 * `commitSoon` joins it to the next batch asked for in this turn of the event loop, or writes it
 * alone after the turn, so a client writing one value after another pays one batch per write
 * (this write queued, the previous one removed) rather than two, one behind the other.
 *
 * Reads see every change asked for, written or not (`get`, `getMany`; not `entries`), so what
 * was committed is read back at once, and a read-then-write of an entry builds on the last one.
 *
 * Reads are synchronous where the store's manifest says `getSync` (classic-level and
 * memory-level 3): a LevelDB read from its cache takes microseconds, while an asynchronous one
 * costs a round trip through libuv's thread pool, several times more CPU than the read itself,
 * on every write that updates the read cache.
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

/** The id of the entry a change writes. */
const entryId = (level: SublevelName, key: string): string => level + '\u0000' + key

/** Runs `f` after this turn of the event loop (once the promise callbacks of the turn ran). */
const afterTurn: (f: () => void) => void =
  typeof globalThis.setImmediate === 'function'
    ? (f) => void globalThis.setImmediate(f)
    : (f) => void setTimeout(f, 0)

/** The device's state as it was persisted. */
export interface StoredState {
  device: string | undefined
  topology: unknown
  url: string | undefined
  /** The whole session and the head of its rows, as stored (`session-store.ts`). */
  session: unknown
  sessionHead: unknown
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
  readonly #syncReads: boolean
  #queue: Waiting[] = []
  #writing: Promise<void> | undefined
  #soon = false
  /** The last change asked for of each entry, until it is written (or failed). */
  readonly #unwritten = new Map<string, StoreChange>()

  constructor(db: PersistStore) {
    this.db = db
    this.#syncReads = db.supports?.getSync === true
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
    const [device, topology, url, session, sessionHead] = await this.#levels.meta.getMany([
      'device',
      'topology',
      'url',
      'session',
      'session-head',
    ])
    return {
      device: typeof device === 'string' ? device : undefined,
      topology,
      url: typeof url === 'string' ? url : undefined,
      session,
      sessionHead,
    }
  }

  /** One value of a sublevel, or undefined. */
  get(level: SublevelName, key: string): Promise<unknown> {
    const change = this.#unwritten.get(entryId(level, key))
    if (change !== undefined)
      return Promise.resolve(change.type === 'put' ? change.value : undefined)
    const sublevel = this.#levels[level]
    // A sublevel opens a few ticks after its database; until then only the async read waits.
    if (!this.#syncReads || sublevel.status !== 'open') return sublevel.get(key)
    try {
      return Promise.resolve(sublevel.getSync!(key))
    } catch (error) {
      return Promise.reject(error as Error)
    }
  }

  /** Values of a sublevel, in the order of `keys` (undefined where there is none). */
  async getMany(level: SublevelName, keys: string[]): Promise<unknown[]> {
    if (this.#syncReads) return Promise.all(keys.map((key) => this.get(level, key)))
    // What is not written yet, as it is now; the rest from the store, in one read.
    const asked = keys.map((key) => this.#unwritten.get(entryId(level, key)))
    const stored = keys.filter((_, i) => asked[i] === undefined)
    const values = stored.length > 0 ? await this.#levels[level].getMany(stored) : []
    let next = 0
    return asked.map((c) =>
      c === undefined ? values[next++] : c.type === 'put' ? c.value : undefined,
    )
  }

  /**
   * The entries of a sublevel in key order, at most `limit`, after `after` when given, of keys
   * starting with `prefix` when given.
   */
  async entries(
    level: SublevelName,
    options: { limit?: number; after?: string; reverse?: boolean; prefix?: string } = {},
  ): Promise<[string, unknown][]> {
    const out: [string, unknown][] = []
    const range: { gt?: string; gte?: string; lt?: string; limit?: number; reverse?: boolean } = {}
    if (options.prefix !== undefined) {
      range.gte = options.prefix
      range.lt = options.prefix + '\uffff'
    }
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
    return this.#ask(changes, false)
  }

  /**
   * Like {@link commit}, but it does not start a batch in this turn of the event loop: it joins
   * the next one asked for, or is written alone after the turn.
   */
  commitSoon(changes: StoreChange[]): Promise<void> {
    return this.#ask(changes, true)
  }

  /**
   * Applies `changes` in a batch of their own, after everything asked for before: never joined
   * with others, so a full store that refuses the others' puts can still take these (removals
   * free space). Rejects with `STORAGE_FULL` when the store refuses it.
   */
  async commitAlone(changes: StoreChange[]): Promise<void> {
    await this.flush()
    const ops: PersistBatchOp[] = changes.map((c) =>
      c.type === 'put'
        ? { type: 'put', key: c.key, value: c.value, sublevel: this.#levels[c.in] }
        : { type: 'del', key: c.key, sublevel: this.#levels[c.in] },
    )
    try {
      await this.db.batch(ops)
    } catch (cause) {
      throw storageFull(cause)
    }
  }

  /** Whether changes are asked for that are not written yet (`entries` does not see them). */
  get busy(): boolean {
    return this.#writing !== undefined || this.#queue.length > 0
  }

  /** Resolves once everything asked for so far is written (or failed). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined || this.#queue.length > 0) {
      this.#writing ??= this.#drain()
      await this.#writing
    }
  }

  #ask(changes: StoreChange[], soon: boolean): Promise<void> {
    if (changes.length === 0) return Promise.resolve()
    for (const c of changes) this.#unwritten.set(entryId(c.in, c.key), c)
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ changes, resolve, reject })
      if (this.#writing !== undefined) return
      if (!soon) this.#writing = this.#drain()
      else if (!this.#soon) {
        this.#soon = true
        afterTurn(() => {
          this.#soon = false
          if (this.#writing === undefined && this.#queue.length > 0) this.#writing = this.#drain()
        })
      }
    })
  }

  async #drain(): Promise<void> {
    // Let the calls of this turn join the first batch.
    await Promise.resolve()
    while (this.#queue.length > 0) {
      const group = this.#queue
      this.#queue = []
      // One caller's changes go as they are (a batch applies them in order: the last one stays).
      const changes = group.length === 1 ? group[0]!.changes : lastOfEach(group)
      const ops: PersistBatchOp[] = changes.map((c) =>
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
      } finally {
        for (const w of group)
          for (const c of w.changes) {
            const id = entryId(c.in, c.key)
            if (this.#unwritten.get(id) === c) this.#unwritten.delete(id)
          }
      }
    }
    this.#writing = undefined
  }
}

/**
 * The changes of `group` in order, each entry's last only: in one atomic batch the last write of
 * an entry is what stays, so the earlier ones (the session, saved with every applied op) need not
 * be encoded and written at all.
 */
function lastOfEach(group: readonly Waiting[]): StoreChange[] {
  const all = group.flatMap((w) => w.changes)
  if (all.length < 2) return all
  const seen = new Set<string>()
  const kept: StoreChange[] = []
  for (let i = all.length - 1; i >= 0; i--) {
    const c = all[i]!
    const id = entryId(c.in, c.key)
    if (seen.has(id)) continue
    seen.add(id)
    kept.push(c)
  }
  return kept.reverse()
}
