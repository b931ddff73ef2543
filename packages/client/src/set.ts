/**
 * `db.set(name)`: a CRDT set (an add-wins observed-remove set, stored as Bigsets) with the same
 * per-call session guarantees as keys. The set lives in the partition of its name, so its reads
 * wait for the session's vector of that partition and its writes advance it.
 *
 * Removing what you observed: `has` and `scan({ withContext: true })` return each element's
 * context; `remove({ element, ctx })` removes exactly the insertions that context names, so an
 * add the reader had not seen (a concurrent one) survives: add wins. `remove('x')` without a
 * context removes what the region's leader holds of `x` once it has caught up with this
 * session's vector for the partition, i.e. at least every insertion of `x` the session has seen.
 */
import {
  CausewayError,
  MAX_SET_WRITE_ELEMENTS,
  SET_SCAN_PAGE,
  checkElement,
  isHlc,
  partitionOf,
  type Hlc,
  type ReadObservation,
} from '@causeway/core'
import type { WriteOutcome, WriteResult } from './client.js'
import { readCall, writeCall, type CheckedRead, type ClientParts } from './client-access.js'
import type { PendingWrite } from './offline/outbox-types.js'
import { isUnreachable } from './offline/outcome.js'
import { checkReplyBounds } from './reply-guard.js'
import type { SetEntry } from './offline/read-cache.js'
import type { ReadOptions, WriteOptions } from './options.js'

/** Options of a set read (`has`, `size`): those of `get`. */
export type SetReadOptions = ReadOptions

/** Options of a set write (`add`, `remove`): those of `put`, without `context`. */
export type SetWriteOptions = Omit<WriteOptions, 'context'>

/** Options of {@link CausewaySet.scan}. */
export interface SetScanOptions extends SetReadOptions {
  /** First element to return (inclusive). @default the first element of the set */
  from?: string
  /** Start strictly after this element; exclusive with `from`. */
  after?: string
  /** Most elements to return. @default all of them */
  limit?: number
  /**
   * Elements per request: the iterator reads the set in pages, each one request (and one read
   * of the session's vector), so memory holds one page at a time.
   * @default 1000
   */
  pageSize?: number
  /** Merge every replica of the region, element by element, instead of reading one. @default false */
  merge?: boolean
  /** `timeoutMs` applies to each page. */
  timeoutMs?: number
}

/** An element with its context, as `scan({ withContext: true })` and removes use it. */
export interface SetElement {
  element: string
  /** The element's context: pass it to `remove` to remove exactly what was read. */
  ctx: string
}

/** What `has` resolves to. */
export interface SetHasResult {
  /** Whether the element is in the set, as the serving replica saw it. */
  found: boolean
  element: string
  /** The element's context (for `remove`); undefined when not found, or added while offline. */
  ctx: string | undefined
  /**
   * `'local'` when answered from this device's read cache (`persist`, offline), with its queued
   * set writes laid over it; then `seen` is empty and `ts` undefined.
   */
  source: 'remote' | 'local'
  /** Per region, the highest log idx of a write of this set that the read reflects. */
  seen: number[]
  /** The highest HLC among those writes; undefined for a set never written. */
  ts: Hlc | undefined
  epoch: number
  region: number
  replica: number
  waitedMs: number
  attempts: number
}

interface ReadMeta {
  seen: number[]
  ts?: Hlc
  epoch: number
  region: number
  replica: number
  waitedMs: number
}

/**
 * A CRDT set of UTF-8 strings (each at most 1 KiB). Get one with `db.set(name)`. With `persist`,
 * writes queue while offline (`{ pending: true, opId }`) and reads are answered from what this
 * device knows: `has` of an element it read or wrote, `size` and `scan` of a set it scanned whole.
 */
export class CausewaySet<Offline extends boolean = false> {
  /** The set's name (a key: it decides the set's partition). */
  readonly name: string
  /** The partition holding the set. */
  readonly partition: number
  readonly #parts: ClientParts
  readonly #path: string

  /** @internal Use `db.set(name)`. */
  constructor(name: string, parts: ClientParts) {
    this.name = name
    this.#parts = parts
    this.partition = partitionOf(name, parts.partitions)
    this.#path = '/v1/sets/' + encodeURIComponent(name)
  }

  /**
   * Adds one or more elements. Each gets a new insertion at the region's leader; re-adding an
   * element that is there replaces its insertion (it stays once). More than 1000 elements are
   * sent as several writes, in order (each atomic, the whole not); the last one's result is
   * returned.
   */
  async add(
    elements: string | readonly string[],
    options?: SetWriteOptions,
  ): Promise<WriteOutcome<Offline>> {
    const list = typeof elements === 'string' ? [elements] : [...elements]
    for (const e of list) checkElement(e)
    return (await this.#write('add', list, options)) as WriteOutcome<Offline>
  }

  /**
   * Removes elements: with a context (`{ element, ctx }` from `has` or `scan`) exactly what it
   * names; a plain string removes what the leader holds once it covers this session (see the
   * module comment). Batches over 1000 are split as in {@link CausewaySet.add}.
   */
  async remove(
    elements: string | SetElement | readonly (string | SetElement)[],
    options?: SetWriteOptions,
  ): Promise<WriteOutcome<Offline>> {
    const list = typeof elements === 'string' || !Array.isArray(elements) ? [elements] : elements
    const items = (list as readonly (string | SetElement)[]).map((e) => {
      if (typeof e === 'string') {
        checkElement(e)
        return e
      }
      if (typeof e !== 'object' || e === null)
        throw new CausewayError('INVALID_ELEMENT', 'an element is a string or { element, ctx }')
      checkElement(e.element)
      if (e.ctx === undefined) return e.element
      if (typeof e.ctx !== 'string')
        throw new CausewayError('INVALID_CONTEXT', 'ctx must be a context from has or scan')
      return { element: e.element, ctx: e.ctx }
    })
    return (await this.#write('remove', items, options)) as WriteOutcome<Offline>
  }

  /** Whether `element` is in the set, and its context. */
  async has(element: string, options?: SetReadOptions): Promise<SetHasResult> {
    checkElement(element)
    const outcome = await this.#read(
      () =>
        readCall(this.#parts, {
          partition: this.partition,
          path: `${this.#path}/has?element=${encodeURIComponent(element)}`,
          what: `has ${JSON.stringify(element)} in set ${JSON.stringify(this.name)}`,
          options,
          check: checkHas,
        }),
      (local) => {
        if (element in local.members) return { found: true, ctx: local.members[element] }
        if (local.complete || local.absent.includes(element)) return { found: false }
        return undefined
      },
      `whether ${JSON.stringify(element)} is in set ${JSON.stringify(this.name)}`,
    )
    if ('local' in outcome) {
      const { found, ctx } = outcome.local
      return {
        found,
        element,
        ctx: ctx ?? undefined,
        seen: [],
        ts: undefined,
        epoch: 1,
        region: this.#parts.home.id,
        replica: 0,
        waitedMs: 0,
        attempts: 0,
        source: 'local',
      }
    }
    const { reply, attempts } = outcome
    this.#parts.offline?.recordSetHas(this.name, element, reply.found, reply.ctx)
    return {
      found: reply.found,
      element,
      ctx: reply.ctx,
      seen: reply.seen,
      ts: reply.ts,
      epoch: reply.epoch,
      region: reply.region,
      replica: reply.replica,
      waitedMs: reply.waitedMs,
      attempts,
      source: 'remote',
    }
  }

  /** The number of elements (exact, as of the serving replica; offline, as this device knows). */
  async size(options?: SetReadOptions): Promise<number> {
    const outcome = await this.#read(
      () =>
        readCall(this.#parts, {
          partition: this.partition,
          path: `${this.#path}/size`,
          what: `size of set ${JSON.stringify(this.name)}`,
          options,
          check: checkSize,
        }),
      (local) => (local.complete ? Object.keys(local.members).length : undefined),
      `the size of set ${JSON.stringify(this.name)}`,
    )
    return 'local' in outcome ? outcome.local : outcome.reply.size
  }

  /**
   * A read: remote, or with `persist` and the gateway out of reach, `local(entry)` over this
   * device's entry of the set with its queued writes laid over it (undefined: it cannot tell).
   */
  async #read<R, L>(
    remote: () => Promise<{ reply: R; attempts: number }>,
    local: (entry: SetEntry) => L | undefined,
    what: string,
  ): Promise<{ reply: R; attempts: number } | { local: L }> {
    const engine = this.#parts.offline
    if (engine === undefined) return remote()
    if (engine.connectivity.online) {
      try {
        return await remote()
      } catch (error) {
        if (!isUnreachable(error) || this.#parts.closing.aborted) throw error
        engine.connectivity.markOffline(error as CausewayError)
      }
    }
    return { local: await engine.readSetLocally(this.name, local, what) }
  }

  /**
   * The elements in order (by code point), read page by page as the iteration goes; stopping
   * early (`break`) stops reading. Each page is a read at the call's level, so a later page never
   * goes back on what an earlier one showed the session.
   */
  scan(options?: SetScanOptions & { withContext?: false }): AsyncIterable<string>
  /** The elements with their contexts (for `remove`), in order. */
  scan(options: SetScanOptions & { withContext: true }): AsyncIterable<SetElement>
  scan(
    options: SetScanOptions & { withContext?: boolean } = {},
  ): AsyncIterable<string | SetElement> {
    const { from, after, limit, pageSize, merge, withContext, ...read } = options
    if (from !== undefined) checkElement(from)
    if (after !== undefined) checkElement(after)
    if (from !== undefined && after !== undefined)
      throw new CausewayError('INVALID_OPTION', 'scan takes from or after, not both')
    const total = limit ?? Infinity
    if (!(total >= 0)) throw new CausewayError('INVALID_OPTION', 'limit must be a number >= 0')
    const page = pageSize ?? SET_SCAN_PAGE
    if (!Number.isSafeInteger(page) || page < 1)
      throw new CausewayError('INVALID_OPTION', 'pageSize must be a positive integer')
    const whole = from === undefined && after === undefined && limit === undefined
    const pages = async function* (
      this: CausewaySet<Offline>,
    ): AsyncGenerator<string | SetElement> {
      const engine = this.#parts.offline
      if (engine !== undefined && !engine.connectivity.online) {
        yield* await engine.scanSetLocally(this.name, {
          from,
          after,
          total,
          withContext: withContext === true,
        })
        return
      }
      let cursor: { from?: string; after?: string } =
        after !== undefined ? { after } : from !== undefined ? { from } : {}
      let returned = 0
      // A whole scan of a set not too large is kept, so it can be scanned offline.
      let seen: { element: string; ctx?: string }[] | undefined =
        engine !== undefined && whole ? [] : undefined
      while (returned < total) {
        const count = Math.min(page, total - returned)
        let query = `limit=${count}`
        if (cursor.from !== undefined) query += `&from=${encodeURIComponent(cursor.from)}`
        if (cursor.after !== undefined) query += `&after=${encodeURIComponent(cursor.after)}`
        if (withContext === true) query += '&ctx=true'
        if (merge === true) query += '&merge=true'
        let reply: ScanPage
        try {
          ;({ reply } = await readCall(this.#parts, {
            partition: this.partition,
            path: `${this.#path}/scan?${query}`,
            what: `scan of set ${JSON.stringify(this.name)}`,
            options: read,
            check: checkScanPage,
          }))
        } catch (error) {
          if (engine === undefined || returned > 0 || !isUnreachable(error)) throw error
          engine.connectivity.markOffline(error as CausewayError)
          yield* await engine.scanSetLocally(this.name, {
            from,
            after,
            total,
            withContext: withContext === true,
          })
          return
        }
        for (const item of reply.elements) {
          if (withContext === true) {
            const e = item as Partial<SetElement>
            if (typeof e?.element !== 'string' || typeof e.ctx !== 'string')
              throw malformed('scan', reply.body)
            seen?.push({ element: e.element, ctx: e.ctx })
            yield { element: e.element, ctx: e.ctx }
          } else {
            if (typeof item !== 'string') throw malformed('scan', reply.body)
            seen?.push({ element: item })
            yield item
          }
          if (seen !== undefined && seen.length > MAX_CACHED_SCAN) seen = undefined
          returned++
        }
        if (reply.next === undefined) {
          if (seen !== undefined) engine?.recordSetScan(this.name, seen)
          return
        }
        cursor = { after: reply.next }
      }
    }
    return { [Symbol.asyncIterator]: () => pages.call(this) }
  }

  async #write(
    op: 'add' | 'remove',
    items: readonly (string | SetElement)[],
    options: SetWriteOptions | undefined,
  ): Promise<WriteResult | PendingWrite> {
    if (items.length === 0) throw new CausewayError('INVALID_ELEMENT', `${op} needs an element`)
    let result: WriteResult | PendingWrite | undefined
    for (let i = 0; i < items.length; i += MAX_SET_WRITE_ELEMENTS) {
      const chunk = items.slice(i, i + MAX_SET_WRITE_ELEMENTS)
      result = await this.#writeChunk(op, chunk, options)
    }
    return result!
  }

  async #writeChunk(
    op: 'add' | 'remove',
    chunk: readonly (string | SetElement)[],
    options: SetWriteOptions | undefined,
  ): Promise<WriteResult | PendingWrite> {
    const send = (
      elements: readonly (string | { element: string; ctx?: string })[],
      opId: string,
    ) =>
      writeCall(this.#parts, {
        method: 'POST',
        partition: this.partition,
        path: `${this.#path}/${op}`,
        body: JSON.stringify({ elements }),
        what: `${op} in set ${JSON.stringify(this.name)}`,
        options,
        // A remove without a context removes what the leader holds once it covers the session.
        withVector: op === 'remove' && elements.some((e) => typeof e === 'string'),
        leaderWaits: true,
        opId,
      })
    const engine = this.#parts.offline
    if (engine === undefined) return send(chunk, this.#parts.nextOpId())
    return engine.writeSet(this.name, this.partition, op, chunk, options, (sent) =>
      send(sent.elements ?? [], sent.opId),
    )
  }
}

/**
 * Checks the meta every set read reply carries. Each region's `seen` is what the read reflects
 * of that region's writes of the set: the session has read that far.
 */
function checkMeta(body: unknown, what: string, regions: number): CheckedRead<ReadMeta> {
  const r = body as Partial<ReadMeta> | null
  if (
    typeof r !== 'object' ||
    r === null ||
    !Array.isArray(r.seen) ||
    r.seen.length !== regions ||
    !r.seen.every((idx) => isCount(idx, 0)) ||
    (r.ts !== undefined && !isHlc(r.ts)) ||
    !isCount(r.epoch, 1) ||
    !isCount(r.region, 0, regions - 1) ||
    !isCount(r.replica, 0) ||
    typeof r.waitedMs !== 'number'
  )
    throw malformed(what, body)
  checkReplyBounds(
    `set ${what}`,
    body,
    [['epoch', r.epoch, 1], ...r.seen.map((idx, d) => [`seen[${d}]`, idx, 0] as const)],
    [['ts', r.ts]],
  )
  const meta = r as ReadMeta
  // The epoch is the serving replica's own region's; other regions' positions' are not said.
  const observed = meta.seen.map((idx, dc): ReadObservation => ({
    ...(dc === meta.region ? { epoch: meta.epoch } : {}),
    dc,
    idx,
    ...(meta.ts ? { ts: meta.ts } : {}),
  }))
  return { reply: meta, observed }
}

function checkHas(
  body: unknown,
  regions: number,
): CheckedRead<ReadMeta & { found: boolean; ctx: string | undefined }> {
  const { reply, observed } = checkMeta(body, 'has', regions)
  const b = body as { found?: unknown; ctx?: unknown }
  if (typeof b.found !== 'boolean' || (b.ctx !== undefined && typeof b.ctx !== 'string'))
    throw malformed('has', body)
  return { reply: { ...reply, found: b.found, ctx: b.ctx as string | undefined }, observed }
}

function checkSize(body: unknown, regions: number): CheckedRead<{ size: number }> {
  const { observed } = checkMeta(body, 'size', regions)
  const size = (body as { size?: unknown }).size
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
    throw malformed('size', body)
  return { reply: { size }, observed }
}

/** A scan page: its elements are checked one by one as the iteration reaches them. */
interface ScanPage {
  elements: unknown[]
  next: string | undefined
  /** The whole reply, for the error of a malformed element. */
  body: unknown
}

function checkScanPage(body: unknown, regions: number): CheckedRead<ScanPage> {
  const b = body as { elements?: unknown; next?: unknown; error?: unknown } | null
  // A scan that failed after its reply began streaming ends with the error.
  if (b?.error !== undefined) throw CausewayError.fromBody(b.error, 200)
  const { observed } = checkMeta(body, 'scan', regions)
  const page = body as { elements?: unknown; next?: unknown }
  if (!Array.isArray(page.elements) || (page.next !== undefined && typeof page.next !== 'string'))
    throw malformed('scan', body)
  return {
    reply: { elements: page.elements, next: page.next as string | undefined, body },
    observed,
  }
}

/** Most elements of a whole scan kept for offline reads. */
const MAX_CACHED_SCAN = 10_000

function isCount(v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max
}

function malformed(what: string, body: unknown): CausewayError {
  return new CausewayError('INTERNAL', `the gateway sent a malformed set ${what} reply`, { body })
}
