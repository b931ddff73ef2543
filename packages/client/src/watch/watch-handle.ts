/**
 * `db.watch(...)`: what the app holds (an async iterable of changes, or a listener it called),
 * in the default entry; the feed itself (`change-feed.ts`, with its server-sent events parser)
 * loads on first use, so an app that never watches does not download it.
 */
import type { ConflictMode, Hlc, ReadLevel, Topology } from '@causeway/core'
import type { ClientParts } from '../client-access.js'
import type { Sibling } from '../client.js'
import type { KeyEntry } from '../offline/read-cache.js'
import type { RegionRef } from '../topology.js'

/** What to watch: a key prefix (a string), or a list of keys. */
export type WatchTarget =
  string | readonly string[] | { prefix: string } | { keys: readonly string[] }

/** Options of `db.watch`. */
export interface WatchOptions {
  /**
   * Resume after this cursor (the `cursor` of a change, or of {@link ChangeStream.cursor}):
   * every change after it arrives, exactly once.
   * @default from now
   */
  since?: string
  /**
   * Read level of the feed: the replicas it tails must cover the session's vector (for this
   * level) before it starts, as a read's would. @default defaults.read ?? 'session'
   */
  read?: ReadLevel
  /** Region whose gateway streams it. @default the home region */
  region?: RegionRef
  /**
   * Heartbeat period asked of the gateway (1000 to 60000 ms). A feed silent for twice that (plus
   * 5 s) is taken as dead and resumed.
   * @default 15000
   */
  heartbeatMs?: number
  /** Ends the watch. */
  signal?: AbortSignal
  /**
   * Called with the error that ends a watch (the iteration throws it instead): a cursor of
   * another cluster or epoch (`INVALID_CURSOR`, `EPOCH_MISMATCH`), credentials, scope. Network
   * failures and gateway restarts do not end it: it resumes from its cursor.
   */
  onError?: (error: unknown) => void
  /** The `fetch` that streams it. @default globalThis.fetch */
  fetch?: typeof globalThis.fetch
}

/** One change of a watched key, as the feed delivered it. */
export interface Change<T = unknown> {
  key: string
  /** The key's partition. */
  partition: number
  /** Origin region of the write. */
  dc: number
  /** Its index in its origin's log of the partition. */
  idx: number
  /** Its HLC. */
  ts: Hlc
  /** A delete (last-writer-wins), or no live sibling left (siblings). */
  deleted: boolean
  /** The value written; in a siblings namespace, the only live value (undefined with several). */
  value: T | undefined
  /** Siblings namespaces: every live value after the write. */
  siblings?: T[]
  /** Siblings namespaces: every version after the write, tombstones included. */
  versions?: Sibling<T>[]
  /** Siblings namespaces: the context of `versions`. */
  context?: string
  /** A set write (`key` is the set's name): the elements it added and removed. */
  set?: { added: string[]; removed: string[] }
  /** Resume after this change with `{ since: cursor }`. */
  cursor: string
}

/** Called with each change. */
export type WatchListener = (change: Change) => void

/** A running watch. */
export interface ChangeStream<T = unknown> extends AsyncIterable<Change<T>> {
  /** The cursor after the last event received (undefined before the first). */
  readonly cursor: string | undefined
  /** Resolves once the feed is live (its first heartbeat); rejects if it ends before. */
  readonly ready: Promise<void>
  /** Ends the watch (the iteration returns). */
  close(): void
}

/** What the feed reaches of its client. @internal */
export interface WatchHost {
  parts: ClientParts
  topology: Topology
  conflictMode(key: string): ConflictMode
  recordKey(key: string, entry: KeyEntry): void
  recordSet(name: string, added: string[], removed: string[]): void
  /** Calls `listener` each time the client finds the gateway again (its `online` event). */
  onOnline(listener: () => void): () => void
}

/** What the feed hands the handle. @internal */
export interface FeedSink {
  change(change: Change): void
  live(cursor: string): void
  cursor(cursor: string): void
  end(error?: unknown): void
  readonly closed: boolean
  readonly signal: AbortSignal
}

/** The handle `db.watch` returns. @internal */
export class WatchHandle implements ChangeStream {
  readonly #queue: Change[] = []
  readonly #listener: WatchListener | undefined
  readonly #abort = new AbortController()
  readonly #options: WatchOptions
  #cursor: string | undefined
  #ended = false
  #error: unknown
  #wake: (() => void) | undefined
  readonly ready: Promise<void>
  #live!: () => void
  #notLive!: (error: unknown) => void

  constructor(
    host: WatchHost,
    target: WatchTarget,
    options: WatchOptions,
    listener: WatchListener | undefined,
  ) {
    this.#listener = listener
    this.#options = options
    this.#cursor = options.since
    this.ready = new Promise<void>((resolve, reject) => {
      this.#live = resolve
      this.#notLive = reject
    })
    this.ready.catch(() => {})
    const signals = [this.#abort.signal, host.parts.closing]
    if (options.signal !== undefined) signals.push(options.signal)
    const signal = AbortSignal.any(signals)
    signal.addEventListener('abort', () => this.#finish(undefined), { once: true })
    const sink: FeedSink = {
      change: (change) => {
        this.#cursor = change.cursor
        if (this.#listener !== undefined) {
          try {
            this.#listener(change)
          } catch (error) {
            queueMicrotask(() => {
              throw error
            })
          }
        } else {
          this.#queue.push(change)
          this.#poke()
        }
      },
      live: (cursor) => {
        this.#cursor = cursor
        this.#live()
      },
      cursor: (cursor) => {
        this.#cursor = cursor
      },
      end: (error) => this.#finish(error),
      get closed() {
        return signal.aborted
      },
      signal,
    }
    import('./change-feed.js')
      .then((feed) => feed.runFeed(host, target, options, sink))
      .catch((error: unknown) => sink.end(error))
  }

  get cursor(): string | undefined {
    return this.#cursor
  }

  close(): void {
    this.#abort.abort()
  }

  #finish(error: unknown): void {
    if (this.#ended) return
    this.#ended = true
    this.#error = error
    if (error !== undefined) {
      this.#notLive(error)
      this.#options.onError?.(error)
    } else this.#notLive(new Error('the watch was closed before it was live'))
    this.#abort.abort()
    this.#poke()
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Change> {
    try {
      for (;;) {
        const next = this.#queue.shift()
        if (next !== undefined) {
          yield next
          continue
        }
        if (this.#ended) {
          if (this.#error !== undefined && this.#options.onError === undefined) throw this.#error
          return
        }
        await new Promise<void>((resolve) => (this.#wake = resolve))
      }
    } finally {
      this.close()
    }
  }
}
