/**
 * The change feed of one region (`GET /v1/watch`): the changes to a key prefix or a list of keys,
 * in order, resumable from a cursor (`watch-cursor.ts`).
 *
 * A feed tails, for each watched partition, one replica of this region chosen as a read would
 * choose it (one whose `sv` covers the session's vector, waited for with a deadline before the
 * feed starts), and keeps per origin region the idx it has read through. It wakes on the replica's
 * `sv` advances (`onAdvance`), never by polling, reads the new entries of each origin from the
 * replica's log (`readLog`, as the shippers and follower feeds do), and hands each entry of a
 * watched key on as an event whose id is the cursor after it. Per partition, events come in the
 * replica's log order of each origin (its apply order is FIFO per origin), so a watcher never sees
 * an origin's changes out of order, and each change carries its `(dc, idx)` for the session.
 *
 * What an event says: a last-writer-wins key, the entry's own value or `deleted` (the version it
 * wrote, with its ts: a watcher that holds a newer one keeps it); a key of a siblings namespace,
 * every sibling and the causal context as a read of the serving replica shows them right then; a
 * set, the elements the write added and removed.
 */
import {
  type Limits,
  type Namespaces,
  type ReadNeed,
  CausewayError,
  type CommitEntry,
  checkNamespaces,
  commitWritesOf,
  conflictModeOf,
  deltaFromJSON,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { LogEntry } from '../storage/partition-replica.js'
import { contextOf, listSiblings } from '../storage/sibling-set.js'
import { type ContextIssuer, type SiblingContexts, issueContext } from './sibling-contexts.js'
import { ReplicaRouter, type ReplicaRouterOptions } from './replica-router.js'
import {
  type PartitionPosition,
  type CursorShape,
  decodeCursor,
  encodeCursor,
} from './watch-cursor.js'

/** What a feed watches: keys starting with a prefix, or a list of keys. */
export type WatchFilter = { prefix: string } | { keys: readonly string[] }

/** A change feed to open, validated by the caller. */
export interface WatchRequest {
  filter: WatchFilter
  /** The partitions the filter can touch. */
  partitions: readonly number[]
  /** A cursor to resume after; absent: from now. */
  since?: string
  /** Per partition, what the serving replica must have applied before the feed starts. */
  needs: ReadonlyMap<number, ReadNeed>
  /** How long the start may wait for replicas covering `needs`, in ms. */
  timeoutMs: number
  /** How often the feed yields a heartbeat, in ms. */
  heartbeatMs: number
}

/** One event of a feed, as server-sent events carry it. */
export interface FeedEvent {
  event: 'change' | 'heartbeat'
  /** The cursor after this event. */
  id: string
  /** JSON text. */
  data: string
}

/** An open change feed. */
export interface ChangeFeed {
  /** The cursor the feed starts after. */
  readonly cursor: string
  /**
   * The events, in order: a heartbeat at once, then changes as they come and a heartbeat every
   * `heartbeatMs`. Ends when the feed is closed; throws when a replica fails (resume from the
   * last event's id). Consume it once.
   */
  events(): AsyncGenerator<FeedEvent>
  /** Ends the feed (the generator returns). */
  close(): void
}

/** The change feeds of one region, as the gateway's watch route uses them. */
export interface ChangeFeedService {
  /**
   * Opens a feed. Throws before anything is streamed: `INVALID_CURSOR`, `EPOCH_MISMATCH`,
   * `VECTOR_UNREACHABLE`, `SESSION_NOT_AVAILABLE` at the deadline.
   */
  open(request: WatchRequest): Promise<ChangeFeed>
}

/** Options of {@link RegionChanges}. */
export interface RegionChangesOptions extends ReplicaRouterOptions {
  cluster: string
  limits: Limits
  namespaces?: Namespaces
  /** Who signs the contexts of sibling events. @default the process's signer */
  siblingContexts?: SiblingContexts
}

// Entries read per origin and partition in one step; a step per partition in turn keeps a busy
// partition from starving the others.
const READ_BATCH = 256

/** The {@link ChangeFeedService} of one region. */
export class RegionChanges implements ChangeFeedService {
  readonly #router: ReplicaRouter
  readonly #shape: CursorShape
  readonly #namespaces: Namespaces
  readonly #issuer: ContextIssuer

  constructor(options: RegionChangesOptions) {
    this.#router = new ReplicaRouter(options)
    this.#shape = {
      cluster: options.cluster,
      regions: options.regionNames.length,
      partitions: options.replicas.length,
    }
    this.#namespaces = checkNamespaces(options.namespaces)
    this.#issuer = { contexts: options.siblingContexts }
  }

  async open(request: WatchRequest): Promise<ChangeFeed> {
    const since = request.since === undefined ? undefined : decodeCursor(request.since, this.#shape)
    for (const p of request.partitions) {
      if (p < 0 || p >= this.#shape.partitions)
        throw new CausewayError('INVALID_REQUEST', `partition ${p} does not exist`)
      const at = since?.get(p)
      if (since !== undefined && at === undefined)
        throw new CausewayError(
          'INVALID_CURSOR',
          `the cursor does not cover partition ${p}, which this watch does: resume a watch with the keys or prefix it was made for`,
          { partition: p },
        )
      // A cursor past a position a failover lost has shown changes that are gone: read again.
      if (at !== undefined) await this.#router.checkPositions(p, { need: [...at.idx] })
    }
    const served = await Promise.all(
      request.partitions.map((p) =>
        this.#router.serve(p, request.needs.get(p), 'any', request.timeoutMs),
      ),
    )
    const tails: Tail[] = request.partitions.map((p, i) => {
      const replica = served[i]!.replica
      const from = since?.get(p)?.idx ?? replica.sv()
      return { p, replica, epoch: replica.epoch(), idx: [...from] }
    })
    return new Feed(tails, request, this.#shape, this.#namespaces, this.#issuer)
  }
}

interface Tail {
  p: number
  replica: AbstractPartitionReplica
  epoch: number
  /** Per origin, the idx read (and handed on, when it matched) through. */
  idx: number[]
}

class Feed implements ChangeFeed {
  readonly cursor: string
  readonly #tails: Tail[]
  readonly #matches: (key: string) => boolean
  readonly #heartbeatMs: number
  readonly #shape: CursorShape
  readonly #namespaces: Namespaces
  readonly #issuer: ContextIssuer
  readonly #unsubscribe: (() => void)[] = []
  #dirty = true
  #heartbeatDue = false
  #closed = false
  #wake: (() => void) | undefined
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    tails: Tail[],
    request: WatchRequest,
    shape: CursorShape,
    namespaces: Namespaces,
    issuer: ContextIssuer,
  ) {
    this.#tails = tails
    this.#heartbeatMs = request.heartbeatMs
    this.#shape = shape
    this.#namespaces = namespaces
    this.#issuer = issuer
    const filter = request.filter
    if ('prefix' in filter) {
      const prefix = filter.prefix
      this.#matches = (key) => key.startsWith(prefix)
    } else {
      const keys = new Set(filter.keys)
      this.#matches = (key) => keys.has(key)
    }
    for (const tail of tails)
      this.#unsubscribe.push(
        tail.replica.onAdvance(() => {
          this.#dirty = true
          this.#poke()
        }),
      )
    this.cursor = this.#cursor()
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#stop()
    this.#poke()
  }

  async *events(): AsyncGenerator<FeedEvent> {
    try {
      yield this.#heartbeat()
      this.#arm()
      while (!this.#closed) {
        if (!this.#dirty && !this.#heartbeatDue) {
          await new Promise<void>((resolve) => (this.#wake = resolve))
          this.#wake = undefined
          continue
        }
        this.#dirty = false
        let progressed = true
        while (progressed && !this.#closed) {
          progressed = false
          for (const tail of this.#tails) {
            const sv = tail.replica.sv()
            for (let d = 0; d < sv.length; d++) {
              const behind = (sv[d] ?? 0) - (tail.idx[d] ?? 0)
              if (behind <= 0) continue
              const entries = await tail.replica.readLog(
                d,
                tail.idx[d] ?? 0,
                Math.min(READ_BATCH, behind),
              )
              if (this.#closed) return
              for (const entry of entries) {
                if (entry.idx <= (tail.idx[d] ?? 0)) continue
                if (entry.kind === 'commit') {
                  // A transaction's writes here, one event per key; every event but the last
                  // carries the cursor before the entry, so a feed resumed in the middle of one
                  // gets all of it again.
                  const before = this.#cursor()
                  tail.idx[d] = entry.idx
                  progressed = true
                  for (const data of this.#commitData(tail, entry, before)) {
                    if (this.#closed) return
                    yield data
                  }
                  continue
                }
                tail.idx[d] = entry.idx
                progressed = true
                if (!this.#matches(entry.key)) continue
                const data = await this.#changeData(tail, entry)
                if (this.#closed) return
                yield { event: 'change', id: this.#cursor(), data }
              }
              if (this.#heartbeatDue) yield this.#heartbeat()
            }
          }
        }
        if (this.#heartbeatDue) yield this.#heartbeat()
      }
    } finally {
      this.#closed = true
      this.#stop()
    }
  }

  #heartbeat(): FeedEvent {
    this.#heartbeatDue = false
    this.#arm()
    const cursor = this.#cursor()
    return { event: 'heartbeat', id: cursor, data: JSON.stringify({ cursor }) }
  }

  #arm(): void {
    clearTimeout(this.#timer)
    if (this.#closed) return
    this.#timer = setTimeout(() => {
      this.#heartbeatDue = true
      this.#poke()
    }, this.#heartbeatMs)
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  #stop(): void {
    clearTimeout(this.#timer)
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe()
  }

  #cursor(): string {
    const positions = new Map<number, PartitionPosition>()
    for (const tail of this.#tails) positions.set(tail.p, { epoch: tail.epoch, idx: tail.idx })
    return encodeCursor(this.#shape, positions)
  }

  /**
   * The events of a commit entry: one per key it writes that the feed watches. Another region's
   * commit entries make none (its writes come here as a relay, a commit entry of this region).
   */
  #commitData(tail: Tail, entry: CommitEntry, before: string): FeedEvent[] {
    if (entry.origin !== tail.replica.region) return []
    const writes = commitWritesOf(entry).filter(([key]) => this.#matches(key))
    // The stream the idx belongs to (a relay is an entry of this region's).
    const dc = entry.origin
    return writes.map(([key, value], i) => {
      const head =
        `{"key":${JSON.stringify(key)},"p":${tail.p},"dc":${dc},` +
        `"idx":${entry.idx},"ts":"${entry.ts}","tid":${entry.tid}`
      const data =
        value === undefined
          ? `${head},"deleted":true}`
          : `${head},"deleted":false,"value":${value}}`
      return { event: 'change', id: i === writes.length - 1 ? this.#cursor() : before, data }
    })
  }

  /** The event data of `entry` (see the module comment), JSON text with stored values spliced in. */
  async #changeData(tail: Tail, entry: LogEntry): Promise<string> {
    const head =
      `{"key":${JSON.stringify(entry.key)},"p":${tail.p},"dc":${entry.origin},` +
      `"idx":${entry.idx},"ts":"${entry.ts}"`
    if (entry.kind === 'set-op') {
      const delta = deltaFromJSON(JSON.parse(entry.setDelta))
      const set = {
        added: [...new Set(delta.adds.map((a) => a.element))],
        removed: [...new Set(delta.removes.map((r) => r.element))],
      }
      return `${head},"deleted":false,"set":${JSON.stringify(set)}}`
    }
    if (conflictModeOf(entry.key, this.#namespaces) === 'siblings') {
      const { siblings, sv } = await tail.replica.readSiblings(entry.key)
      const listed = listSiblings(siblings)
      const live = listed.filter((s) => s.value !== undefined)
      const items = listed.map((s) => {
        const fields = `{"ts":"${s.ts}","dc":${s.dc},"idx":${sv[s.dc] ?? 0}`
        return s.value === undefined ? `${fields}}` : `${fields},"value":${s.value}}`
      })
      const value = live.length === 1 ? `,"value":${live[0]!.value}` : ''
      const context = JSON.stringify(issueContext(this.#issuer, entry.key, contextOf(siblings)))
      return `${head},"deleted":${live.length === 0}${value},"siblings":[${items.join(',')}],"context":${context}}`
    }
    if (entry.kind !== 'put') return `${head},"deleted":true}`
    return `${head},"deleted":false,"value":${entry.value}}`
  }
}
