/**
 * The read cache as the store keeps it: what remote reads, the change feed and set replies
 * showed of each key and set, recorded in the background one after the other per entry (each a
 * read of the entry and a write of the next, only when it is at least as new), and the entries
 * applied writes leave. A key of a siblings namespace found to hold more than one live version
 * raises the `conflict` event.
 */
import { HLC_ZERO } from '@causeway/core'
import type { WriteResult } from '../client.js'
import { cacheIdOf, entryAfter } from './cache-entries.js'
import type { EngineContext } from './engine-context.js'
import type { StoreChange } from './local-store.js'
import type { StoredOp } from './outbox-types.js'
import { asCausewayError } from './outcome.js'
import {
  type KeyEntry,
  type SetEntry,
  isAtLeastAsNew,
  keyEntryId,
  setEntryId,
  setFromScan,
  setWithAdds,
  setWithHas,
  setWithRemoves,
} from './read-cache.js'

export class CacheRecords {
  readonly #ctx: EngineContext
  /** The last recording of each entry: the next one runs after it. */
  readonly #chains = new Map<string, Promise<void>>()
  /**
   * Entries applied writes left that a full store could not take (`AppliedOps.record`): read
   * before the store's until they are written, so local reads still show those writes.
   */
  readonly #memory = new Map<string, unknown>()

  constructor(ctx: EngineContext) {
    this.#ctx = ctx
  }

  /** The cache entry of a key, or undefined. */
  async key(key: string): Promise<KeyEntry | undefined> {
    await this.#ctx.settleApplied()
    const entry = (await this.#stored(keyEntryId(key))) as KeyEntry | undefined
    return entry?.t === 'k' ? entry : undefined
  }

  /** The cache entry of a set, or undefined. */
  async set(name: string): Promise<SetEntry | undefined> {
    await this.#ctx.settleApplied()
    // A set read's recording under way first: a remove made right after a `has` carries the
    // context that `has` showed (add-wins), not none.
    await this.#chains.get(setEntryId(name))
    const entry = (await this.#stored(setEntryId(name))) as SetEntry | undefined
    return entry?.t === 's' ? entry : undefined
  }

  /** An entry, from {@link keep} first, else from the store. */
  #stored(id: string): Promise<unknown> {
    return this.#memory.has(id)
      ? Promise.resolve(this.#memory.get(id))
      : this.#ctx.store.get('cache', id)
  }

  /** Keeps the cache entries of `changes` in memory: the store refused them. */
  keep(changes: readonly StoreChange[]): void {
    for (const c of changes)
      if (c.in === 'cache' && c.type === 'put') this.#memory.set(c.key, c.value)
  }

  /** The entries of `changes` still kept in memory, as they are now, to write. */
  kept(changes: readonly StoreChange[]): StoreChange[] {
    const out: StoreChange[] = []
    for (const c of changes)
      if (c.in === 'cache' && this.#memory.has(c.key))
        out.push({ type: 'put', in: 'cache', key: c.key, value: this.#memory.get(c.key) })
    return out
  }

  /** The entries of `changes` are in the store now. */
  written(changes: readonly StoreChange[]): void {
    for (const c of changes) if (c.in === 'cache') this.#memory.delete(c.key)
  }

  /** Records a remote read of `key` (only if at least as new), reporting a conflict. */
  recordKey(key: string, next: KeyEntry): void {
    const { store, host } = this.#ctx
    const id = keyEntryId(key)
    const previous = this.#chains.get(id) ?? Promise.resolve()
    const chained = previous.then(async () => {
      if (this.#ctx.closed) return
      // A write applied before this read was made is in the entry first (`AppliedOps.defer`).
      await this.#ctx.settleApplied()
      const old = (await this.#stored(id)) as KeyEntry | undefined
      if (!isAtLeastAsNew(old?.t === 'k' ? old : undefined, next)) return
      await store.commit([{ type: 'put', in: 'cache', key: id, value: next }])
      this.#memory.delete(id)
      const live = (next.versions ?? []).filter((v) => !v.deleted)
      if (live.length > 1 && old?.context !== next.context)
        host.events.emit('conflict', {
          key,
          siblings: live.map((v) => v.value),
          versions: (next.versions ?? []).map((v) => ({
            value: v.value,
            deleted: v.deleted,
            ts: v.ts ?? HLC_ZERO,
            dc: v.dc ?? -1,
          })),
          context: next.context,
        })
    })
    const tail = chained.catch((error: unknown) =>
      host.events.emit('error', { error: asCausewayError(error) }),
    )
    this.#chains.set(id, tail)
    void tail.then(() => {
      if (this.#chains.get(id) === tail) this.#chains.delete(id)
    })
  }

  /** Records what a set read showed. */
  recordSet(name: string, update: (old: SetEntry | undefined) => SetEntry): void {
    const { store, host } = this.#ctx
    const id = setEntryId(name)
    const previous = this.#chains.get(id) ?? Promise.resolve()
    const tail = previous
      .then(async () => {
        if (this.#ctx.closed) return
        await this.#ctx.settleApplied()
        const old = (await this.#stored(id)) as SetEntry | undefined
        await store.commit([
          { type: 'put', in: 'cache', key: id, value: update(old?.t === 's' ? old : undefined) },
        ])
        this.#memory.delete(id)
      })
      .catch((error: unknown) => host.events.emit('error', { error: asCausewayError(error) }))
    this.#chains.set(id, tail)
  }

  /** Records a set's `has` reply. */
  recordSetHas(name: string, element: string, found: boolean, ctx: string | undefined): void {
    this.recordSet(name, (old) => setWithHas(old, element, found, ctx))
  }

  /** Records a whole scan of a set. */
  recordSetScan(name: string, elements: { element: string; ctx?: string }[]): void {
    const entry = setFromScan(elements)
    this.recordSet(name, () => entry)
  }

  /** Records what a change of the feed says of a set. */
  recordSetChange(name: string, added: string[], removed: string[]): void {
    this.recordSet(name, (old) => setWithRemoves(setWithAdds(old, added), removed))
  }

  /** Resolves once every recording asked for so far is done. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#chains.values()])
  }

  /** The cache entries the applied writes leave. */
  async afterWrites(done: { op: StoredOp; result: WriteResult }[]): Promise<StoreChange[]> {
    if (done.length === 0) return []
    const ids = [...new Set(done.map(({ op }) => cacheIdOf(op)))]
    const old = new Map<string, unknown>()
    const values = await this.#ctx.store.getMany('cache', ids)
    ids.forEach((id, i) => old.set(id, this.#memory.has(id) ? this.#memory.get(id) : values[i]))
    for (const { op, result } of done) {
      const id = cacheIdOf(op)
      old.set(id, entryAfter(old.get(id), op, result, this.#ctx.host.conflictMode(op.key)))
    }
    return ids.map((id) => ({ type: 'put', in: 'cache', key: id, value: old.get(id) }))
  }
}
