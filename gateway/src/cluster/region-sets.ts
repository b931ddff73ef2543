/**
 * The sets of one region (`db.set(name)` over HTTP): routing, session vectors and contexts on
 * top of the replicas' sets (`AbstractSetReplica`). A set lives in the partition of its name, so its
 * reads wait for the session's vector of that partition and its writes are stamped and logged by
 * that partition's leader, exactly as a key's.
 *
 * - Writes go to the leader. An add mints one dot per element; a remove removes the contexts the
 *   client sends back (tokens from `has`/`scan`) or, for an element sent without one, what the
 *   leader observes once it has caught up with the session's read vector (so it removes at least
 *   what the session has seen of that element).
 * - Reads are served by one replica covering the session's vector, or with `merge` by every
 *   available replica of the region, their ordered streams merged element by element (Bigsets
 *   section 4.4) so that nothing holds more than one element per replica.
 * - Every read reports the set's stamp (`seen`, `ts`), which the session records like a key
 *   read's `(dc, idx, ts)`.
 */
import {
  CausewayError,
  mergeReplicaStreams,
  type Durability,
  type Hlc,
  type ReadLevel,
  type ReadNeed,
  type ReplicaChoice,
  type SetEntry,
  type WriteLevel,
  namespaceOf,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { SetElementOp, SetStamp } from '../storage/set-replica.js'
import type { WriteOp, WriteResult } from './cluster-service.js'
import {
  ReplicaRouter,
  type ReplicaRouterOptions,
  keptVector,
  positionEpoch,
} from './replica-router.js'
import { ContextTokens } from './set-contexts.js'

/** Options of {@link RegionSets}. */
export interface RegionSetsOptions extends ReplicaRouterOptions {
  /**
   * The secret element contexts are signed with; every gateway of a cluster needs the same one.
   * @default a random secret per process (enough when one process serves every region)
   */
  contextSecret?: Uint8Array
}

/** A set read, validated and routed to the set's partition. */
export interface SetReadRequest {
  name: string
  partition: number
  /** What the replica must have applied; undefined for an eventual read. */
  need?: ReadNeed
  replica: ReplicaChoice
  timeoutMs: number
  level: ReadLevel
}

/** Where and as of what a set read was served. */
export interface SetReadMeta {
  /** What the read reflects (see `SetStamp`). */
  stamp: SetStamp
  epoch: number
  /** The serving replica (the leader's index, 0, for a merge of several). */
  replica: number
  /** How many replicas a merged read merged; absent otherwise. */
  merged?: number
  waitedMs: number
}

/** What `has` returns. */
export interface SetHasResult extends SetReadMeta {
  found: boolean
  /** The element's context (a token for a later remove); absent when not found. */
  ctx?: string
}

/** What `size` returns. */
export interface SetSizeResult extends SetReadMeta {
  size: number
}

/** A scan request. */
export interface SetScanRequest extends SetReadRequest {
  from?: string
  after?: string
  /** Most elements to return. */
  limit: number
  /** Return each element's context too (costs an HMAC per element). */
  withContext?: boolean
  /** Merge every available replica of the region instead of reading one. */
  merge?: boolean
}

/** One element of a scan. */
export interface ScannedElement {
  element: string
  ctx?: string
}

/** A scan: its elements, streamed, then where it stopped and what it reflected. */
export interface SetScanResult {
  elements: AsyncIterable<ScannedElement>
  /** Call once `elements` is done: the read's meta and, when `limit` cut it short, `next`. */
  finish(): Promise<SetReadMeta & { next?: string }>
}

/** A set write (add or remove), validated. */
export interface SetWriteRequest {
  name: string
  partition: number
  op: 'add' | 'remove'
  /** Each element, with the context token the client sends back (removes). */
  elements: readonly { element: string; ctx?: string }[]
  dt: Hlc
  durability: Durability
  level: WriteLevel
  /**
   * The session's read vector: a remove of elements without a context waits at the leader until
   * it covers this, so the leader's observation includes the session's.
   */
  need?: ReadNeed
  /** How long that wait may take, in ms. */
  timeoutMs: number
  /** The write's operation id and request fingerprint (as for key writes, `WriteRequest.op`). */
  opId?: WriteOp
}

/** The set operations of one region, as the gateway's routes use them. */
export interface SetService {
  write(request: SetWriteRequest): Promise<WriteResult>
  has(request: SetReadRequest & { element: string }): Promise<SetHasResult>
  size(request: SetReadRequest): Promise<SetSizeResult>
  /** Throws before streaming (bad options, `SESSION_NOT_AVAILABLE`, ...); the stream may fail too. */
  scan(request: SetScanRequest): Promise<SetScanResult>
}

/** The {@link SetService} of one region. */
export class RegionSets implements SetService {
  readonly region: number
  readonly #router: ReplicaRouter
  readonly #tokens: ContextTokens

  constructor(options: RegionSetsOptions) {
    this.region = options.region
    this.#router = new ReplicaRouter(options)
    this.#tokens = new ContextTokens(options.contextSecret)
  }

  async write(request: SetWriteRequest): Promise<WriteResult> {
    const { name, partition } = request
    await this.#router.checkDependency(request.dt)
    // A write after one of the session's that a failover lost would be applied without it.
    if (request.need !== undefined && request.level !== 'eventual')
      await this.#router.checkPositions(partition, request.need)
    const elements: SetElementOp[] = request.elements.map((e) =>
      e.ctx === undefined
        ? { element: e.element }
        : { element: e.element, ctx: this.#tokens.verify(name, e.element, e.ctx) },
    )
    const leader = this.#router.activeLeader(partition)
    const observes = request.op === 'remove' && elements.some((e) => e.ctx === undefined)
    const observe = async (): Promise<void> => {
      if (!observes || request.need === undefined || request.level === 'eventual') return
      await this.#router.checkNeed(partition, request.need)
      await this.#router.wait(partition, leader, request.need, request.timeoutMs)
    }
    if (request.opId !== undefined) {
      const { id, fingerprint, tenant } = request.opId
      const outcome = await leader.writeOnce(
        { namespace: namespaceOf(name) ?? '', id, fingerprint, ...(tenant ? { tenant } : {}) },
        { kind: 'set', name, write: { op: request.op, elements } },
        request.dt,
        observe,
      )
      const record = 'replayed' in outcome ? outcome.replayed : outcome.record
      if (request.durability === 'majority') await this.#router.majority(partition, record.idx)
      const result: WriteResult = {
        ts: record.ts,
        dc: this.region,
        idx: record.idx,
        epoch: record.epoch,
      }
      if ('replayed' in outcome) result.replayed = true
      return result
    }
    await observe()
    const entry = await leader.sets.write(name, { op: request.op, elements }, request.dt)
    if (request.durability === 'majority') await this.#router.majority(partition, entry.idx)
    return {
      ts: entry.ts,
      dc: this.region,
      idx: entry.idx,
      epoch: positionEpoch(leader, this.region, entry.idx),
    }
  }

  async has(request: SetReadRequest & { element: string }): Promise<SetHasResult> {
    const { replica, waitedMs } = await this.#serve(request)
    const { dots, stamp: raw } = await replica.sets.has(request.name, request.element)
    const stamp = keptStamp(replica, raw)
    const result: SetHasResult = {
      found: dots.length > 0,
      stamp,
      epoch: positionEpoch(replica, this.region, stamp.seen[this.region]),
      replica: replica.replica,
      waitedMs,
    }
    if (dots.length > 0) result.ctx = this.#tokens.issue(request.name, request.element, dots)
    return result
  }

  async size(request: SetReadRequest): Promise<SetSizeResult> {
    const { replica, waitedMs } = await this.#serve(request)
    const { size, stamp: raw } = await replica.sets.size(request.name)
    const stamp = keptStamp(replica, raw)
    return {
      size,
      stamp,
      epoch: positionEpoch(replica, this.region, stamp.seen[this.region]),
      replica: replica.replica,
      waitedMs,
    }
  }

  async scan(request: SetScanRequest): Promise<SetScanResult> {
    const { name, limit } = request
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new CausewayError('INVALID_OPTION', 'limit must be a non-negative integer')
    const range = request.after !== undefined ? { after: request.after } : { from: request.from }
    if (request.from !== undefined && request.after !== undefined)
      throw new CausewayError('INVALID_OPTION', 'a scan takes from or after, not both', {
        option: 'after',
      })
    let source: AsyncIterable<SetEntry>
    let meta: () => Promise<SetReadMeta>
    if (request.merge === true) {
      const merged = await this.#merged(request, range, limit + 1)
      source = merged.entries
      meta = merged.meta
    } else {
      const { replica, waitedMs } = await this.#serve(request)
      const scan = replica.sets.scan(name, { ...range, limit: limit + 1 })
      source = scan
      meta = async () => {
        const stamp = keptStamp(replica, await scan.stamp())
        return {
          stamp,
          epoch: positionEpoch(replica, this.region, stamp.seen[this.region]),
          replica: replica.replica,
          waitedMs,
        }
      }
    }
    const tokens = this.#tokens
    let next: string | undefined
    async function* elements(): AsyncGenerator<ScannedElement> {
      let count = 0
      let last: string | undefined
      for await (const entry of source) {
        // One more than asked was read, to know whether the scan was cut short.
        if (count === limit) {
          next = last
          return
        }
        count++
        last = entry.element
        yield request.withContext === true
          ? { element: entry.element, ctx: tokens.issue(name, entry.element, entry.dots) }
          : { element: entry.element }
      }
    }
    return {
      elements: elements(),
      finish: async () => {
        const result: SetReadMeta & { next?: string } = await meta()
        if (next !== undefined) result.next = next
        return result
      },
    }
  }

  // Every available replica, once each covers the need, merged element by element.
  async #merged(
    request: SetReadRequest,
    range: { from?: string; after?: string },
    limit: number,
  ): Promise<{ entries: AsyncIterable<SetEntry>; meta: () => Promise<SetReadMeta> }> {
    const p = request.partition
    await this.#router.checkNeed(p, request.need)
    const replicas = this.#router.serving(p)
    const waited = await Promise.all(
      replicas.map((r) => this.#router.wait(p, r, request.need, request.timeoutMs)),
    )
    const streams = await Promise.all(replicas.map((r) => r.sets.stream(request.name, range)))
    const leader = this.#router.leader(p)
    return {
      entries: mergeReplicaStreams(streams, { limit }),
      meta: async () => {
        const stamps = await Promise.all(streams.map((s) => s.stamp()))
        const stamp = keptStamp(leader, maxStamp(stamps))
        return {
          stamp,
          epoch: positionEpoch(leader, this.region, stamp.seen[this.region]),
          replica: leader.replica,
          merged: replicas.length,
          waitedMs: Math.max(0, ...waited),
        }
      },
    }
  }

  #serve(request: SetReadRequest) {
    return this.#router.serve(request.partition, request.need, request.replica, request.timeoutMs)
  }
}

// A stamp whose `seen` holds only positions the histories keep (see `keptPosition`).
function keptStamp(replica: AbstractPartitionReplica, stamp: SetStamp): SetStamp {
  return { ...stamp, seen: keptVector(replica, stamp.seen) }
}

function maxStamp(stamps: readonly SetStamp[]): SetStamp {
  const seen = [...(stamps[0]?.seen ?? [])]
  let ts = stamps[0]?.ts
  for (const s of stamps.slice(1)) {
    s.seen.forEach((idx, d) => {
      if (idx > (seen[d] ?? 0)) seen[d] = idx
    })
    if (ts === undefined || s.ts > ts) ts = s.ts
  }
  return { seen, ts: ts ?? ('0000000000000000' as Hlc) }
}
