/**
 * Reads as this device sees them: the read cache with the queued writes laid over it. Offline
 * they are the answer (`source: 'local'`, or `OFFLINE` when the device knows nothing of the key);
 * online, a remote read of a key with queued writes shows them too.
 */
import { OfflineError, type CausewayError, type ReadReply } from '@causeway/core'
import type { ReadResult } from '../client.js'
import type { SetElement } from '../set.js'
import { entryOfRead } from './cache-entries.js'
import type { CacheRecords } from './cache-records.js'
import type { EngineContext } from './engine-context.js'
import type { StoredOp } from './outbox-types.js'
import type { KeyEntry, SetEntry } from './read-cache.js'
import { overlay } from './read-overlay.js'
import { scanView, setView } from './set-local.js'

export class LocalReads {
  readonly #ctx: EngineContext
  readonly #cache: CacheRecords

  constructor(ctx: EngineContext, cache: CacheRecords) {
    this.#ctx = ctx
    this.#cache = cache
  }

  /** The queued ops of `key` (a key or a set's name), oldest first. */
  async queuedFor(key: string, kinds: 'kv' | 'set'): Promise<StoredOp[]> {
    const { count, store } = this.#ctx
    if (count.value <= this.#ctx.removing.size) return []
    const removing = new Set(this.#ctx.removing)
    const out: StoredOp[] = []
    for (const [, value] of await store.entries('outbox')) {
      const op = value as StoredOp
      if (op.key !== key || removing.has(op.opId)) continue
      if ((op.kind === 'put' || op.kind === 'delete') === (kinds === 'kv')) out.push(op)
    }
    return out
  }

  /**
   * A read served from the cache with the queued writes of the key laid over it; `OFFLINE`
   * when this device knows nothing of the key.
   */
  async localRead<T>(key: string, why: CausewayError | undefined): Promise<ReadResult<T>> {
    this.#ctx.connectivity.probeSoon()
    const [entry, ops] = await Promise.all([this.#cache.key(key), this.queuedFor(key, 'kv')])
    if (entry === undefined && ops.length === 0)
      throw new OfflineError(
        `offline, and this device has never read or written ${JSON.stringify(key)}`,
        { key },
        why === undefined ? undefined : { cause: why },
      )
    return this.#overlay<T>(key, entry, ops, 'local')
  }

  /**
   * Records a remote read of `key` and, when the key has queued writes, the read with them laid
   * over it (undefined when it has none).
   */
  async afterRemoteRead<T>(
    key: string,
    reply: ReadReply,
    result: ReadResult<T>,
  ): Promise<ReadResult<T> | undefined> {
    const entry = entryOfRead(reply)
    this.#cache.recordKey(key, entry)
    if (this.#ctx.count.value === 0) return undefined
    const queued = await this.queuedFor(key, 'kv')
    if (queued.length === 0) return undefined
    return this.#overlay<T>(key, entry, queued, 'remote', result)
  }

  /** This device's view of a set: its entry with its queued writes laid over it. */
  async setView(name: string): Promise<SetEntry | undefined> {
    const [entry, ops] = await Promise.all([this.#cache.set(name), this.queuedFor(name, 'set')])
    return setView(entry, ops)
  }

  /** A set read answered from {@link setView}, or `OFFLINE` when it cannot tell (`answer`). */
  async readSetLocally<L>(
    name: string,
    answer: (view: SetEntry) => L | undefined,
    what: string,
  ): Promise<L> {
    this.#ctx.connectivity.probeSoon()
    const view = await this.setView(name)
    const local = view === undefined ? undefined : answer(view)
    if (local === undefined)
      throw new OfflineError(`offline, and this device cannot tell ${what}`, { set: name })
    return local
  }

  /** A scan answered from {@link setView}: only a set this device scanned whole. */
  async scanSetLocally(
    name: string,
    range: {
      from?: string | undefined
      after?: string | undefined
      total: number
      withContext: boolean
    },
  ): Promise<Iterable<string | SetElement>> {
    this.#ctx.connectivity.probeSoon()
    const view = await this.setView(name)
    if (view === undefined || !view.complete)
      throw new OfflineError(
        `offline, and this device never scanned set ${JSON.stringify(name)} whole`,
        { set: name },
      )
    return scanView(view, range)
  }

  #overlay<T>(
    key: string,
    entry: KeyEntry | undefined,
    ops: StoredOp[],
    source: 'local' | 'remote',
    base?: ReadResult<T>,
  ): ReadResult<T> {
    const { host } = this.#ctx
    return overlay<T>(entry, ops, {
      siblings: host.conflictMode(key) === 'siblings',
      source,
      base,
      homeRegion: host.parts.home.id,
    })
  }
}
