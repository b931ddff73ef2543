/**
 * The shopping list over Causeway: what is on it, and each item's content.
 *
 * - Which items are on the list: the Bigset `list:<name>:items` of item ids. Adding an id offline on
 *   one phone and removing it on the other keeps it (add-wins), and a remove removes only the
 *   additions this phone saw.
 * - Each item: the key `list:<name>:item:<id>` in the siblings namespace `list`, value
 *   `{ text, done }`.
 *   Two phones that edit one item offline leave two versions (siblings), shown side by side
 *   until a user keeps one or merges them; nothing is lost silently.
 * - An edit also adds the id to the set again, so an item edited on one phone while the other
 *   removed it stays on the list, with the edit (an edit says someone still wants it).
 *
 * docs/offline.md explains the choice against one siblings key per item alone.
 */
import {
  OfflineError,
  type Causeway,
  type Change,
  type ChangeStream,
  type ReadResult,
} from '@causeway/client'
import { isItem, mergeItems, type Item } from './merge.js'

/** The keys of list `name`: the set of its ids, each item's key, and their common prefix. */
export function listKeys(name: string): {
  items: string
  item: (id: string) => string
  itemPrefix: string
  prefix: string
} {
  const prefix = `list:${name}:`
  return {
    items: `${prefix}items`,
    item: (id) => `${prefix}item:${id}`,
    itemPrefix: `${prefix}item:`,
    prefix,
  }
}

/** One item as the list shows it. */
export interface ItemView {
  id: string
  /** Its live versions: one normally, several after offline edits on two phones. */
  versions: Item[]
  /** The causal context of those versions: a write with it supersedes them (and only them). */
  context: string | undefined
  /** Whether this phone has queued changes of it that the gateway has not applied yet. */
  pending: boolean
  /** Where the read came from: `remote` (a gateway answered) or `local` (this device's copy). */
  source: 'remote' | 'local'
}

/** The one version of a view, or the merge of its versions (what a tick edits). */
export function currentItem(view: ItemView): Item | undefined {
  if (view.versions.length === 0) return undefined
  return view.versions.length === 1 ? view.versions[0] : mergeItems(view.versions)
}

function newId(): string {
  // Time first: the set scans in id order, which is then the order items were added.
  return Date.now().toString(36).padStart(9, '0') + '-' + crypto.randomUUID().slice(0, 6)
}

/** The list of one phone. */
export class ShoppingList {
  readonly db: Causeway<true>
  readonly keys: ReturnType<typeof listKeys>
  /** Ids on the list, in order. */
  readonly #ids = new Set<string>()
  readonly #views = new Map<string, ItemView>()
  readonly #listeners = new Set<() => void>()
  /** Whether the list has been read whole (online) or from this device's copy. */
  known = false
  #feed: ChangeStream | undefined
  readonly #fetch: typeof globalThis.fetch | undefined

  /** `options.fetch`: what the change feed streams with (the phone's network switch). */
  constructor(db: Causeway<true>, name: string, options: { fetch?: typeof globalThis.fetch } = {}) {
    this.db = db
    this.keys = listKeys(name)
    this.#fetch = options.fetch
  }

  /** The items in order, with their views (an item whose content is not known yet has none). */
  items(): { id: string; view: ItemView | undefined }[] {
    return [...this.#ids].sort().map((id) => ({ id, view: this.#views.get(id) }))
  }

  view(id: string): ItemView | undefined {
    return this.#views.get(id)
  }

  /** Calls `listener` after every change of what the list shows. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #changed(): void {
    for (const listener of this.#listeners) listener()
  }

  /**
   * Reads the list whole: the ids (a scan of the set), then every item. Offline, from what this
   * phone knows; `OFFLINE` when it never saw the list.
   */
  async load(): Promise<void> {
    const ids: string[] = []
    for await (const id of this.db.set(this.keys.items).scan()) ids.push(id)
    this.#ids.clear()
    for (const id of ids) this.#ids.add(id)
    for (const id of this.#views.keys()) if (!this.#ids.has(id)) this.#views.delete(id)
    this.known = true
    await Promise.all(ids.map((id) => this.refresh(id, false)))
    this.#changed()
  }

  /** Reads item `id` again (from the gateway, or this device's copy offline). */
  async refresh(id: string, notify = true): Promise<void> {
    let read: ReadResult<unknown>
    try {
      read = await this.db.get(this.keys.item(id))
    } catch (error) {
      // An item this phone never read, while offline: it shows once the network is back.
      if (error instanceof OfflineError) return
      throw error
    }
    this.#views.set(id, viewOf(id, read))
    if (notify) this.#changed()
  }

  /** Adds an item. */
  async add(text: string): Promise<string> {
    const id = newId()
    const item: Item = { text: text.trim(), done: false }
    // The key first, then the id: a phone that sees the id can read the item.
    await this.db.put(this.keys.item(id), item, { context: null })
    await this.db.set(this.keys.items).add([id])
    this.#ids.add(id)
    await this.refresh(id)
    return id
  }

  /** Ticks or unticks an item. */
  tick(id: string, done: boolean): Promise<void> {
    return this.#edit(id, (item) => ({ ...item, done }))
  }

  /** Renames an item. */
  rename(id: string, text: string): Promise<void> {
    return this.#edit(id, (item) => ({ ...item, text: text.trim() }))
  }

  async #edit(id: string, change: (item: Item) => Item): Promise<void> {
    const view = this.#views.get(id)
    const item = view === undefined ? undefined : currentItem(view)
    if (item === undefined) return
    // With the context read, the edit supersedes every version this phone shows (a tick while
    // a conflict shows settles it with the merge), and nothing it did not see.
    await this.db.put(this.keys.item(id), change(item), { context: view!.context ?? null })
    await this.db.set(this.keys.items).add([id])
    await this.refresh(id)
  }

  /** Takes an item off the list (its key gets a tombstone over the versions shown). */
  async remove(id: string): Promise<void> {
    const view = this.#views.get(id)
    await this.db.set(this.keys.items).remove([id])
    await this.db.delete(this.keys.item(id), { context: view?.context ?? null })
    this.#ids.delete(id)
    this.#views.delete(id)
    this.#changed()
  }

  /** Settles a conflict with one of its versions, superseding the versions shown. */
  async keep(id: string, version: Item): Promise<void> {
    const view = this.#views.get(id)
    await this.db.put(this.keys.item(id), version, { context: view?.context ?? null })
    await this.refresh(id)
  }

  /** Settles a conflict with the merge of every version (read again first: `db.resolve`). */
  async merge(id: string): Promise<void> {
    await this.db.resolve<unknown>(this.keys.item(id), (siblings) =>
      mergeItems(siblings.filter(isItem)),
    )
    await this.refresh(id)
  }

  /** Follows the other phones' changes through the change feed. */
  watch(): ChangeStream {
    this.#feed?.close()
    this.#feed = this.db.watch(
      this.keys.prefix,
      (change) => void this.#apply(change),
      this.#fetch === undefined ? {} : { fetch: this.#fetch },
    )
    return this.#feed
  }

  async #apply(change: Change): Promise<void> {
    if (change.key === this.keys.items && change.set !== undefined) {
      for (const id of change.set.removed) {
        this.#ids.delete(id)
        this.#views.delete(id)
      }
      const added = change.set.added.filter((id) => !this.#ids.has(id))
      for (const id of change.set.added) this.#ids.add(id)
      await Promise.all(
        added.filter((id) => !this.#views.has(id)).map((id) => this.refresh(id, false)),
      )
      this.#changed()
    } else if (change.key.startsWith(this.keys.itemPrefix)) {
      const id = change.key.slice(this.keys.itemPrefix.length)
      if (!this.#ids.has(id) && !this.#views.has(id)) return
      // Read through the SDK rather than taking the change as is: it lays this phone's queued
      // writes over it, and the read waits for what the session saw.
      await this.refresh(id)
    }
  }

  close(): void {
    this.#feed?.close()
  }
}

/** A read of an item's key as a view. */
export function viewOf(id: string, read: ReadResult<unknown>): ItemView {
  const values = read.siblings ?? (read.found ? [read.value] : [])
  return {
    id,
    versions: values.filter(isItem),
    context: read.context,
    pending: read.pending,
    source: read.source,
  }
}
