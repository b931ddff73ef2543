/**
 * The change feed client: `GET /v1/watch` as server-sent events over a streaming `fetch`
 * (browsers and Node alike), parsed by `eventsource-parser`, resumed from its cursor after a
 * disconnect, a gateway restart or a silent connection (no heartbeat for twice its period).
 *
 * Session: each (re)start sends the session's vector of every watched partition at the watch's
 * read level (`causeway-after: p=<vector>;...`), so the gateway tails replicas that already show
 * what the session has seen; each change is then recorded as a read (`hrm[dc][p]`, `dtR`). A
 * change of a last-writer-wins key older (by `(ts, dc)`) than one this watch already delivered is
 * not delivered: it lost, and showing it would take the key back in time.
 */
import {
  CausewayError,
  HEADER_AFTER,
  formatReadNeed,
  isHlc,
  partitionOf,
  type ChangeEvent,
  type ReadLevel,
} from '@causeway/core'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import type { Sibling } from '../client.js'
import { checkRead } from '../options.js'
import type { KeyEntry } from '../offline/read-cache.js'
import { findRegion } from '../topology.js'
import {
  checkCredentialsOrigin,
  checkReplyBounds,
  invalidReply,
  replyTooLarge,
} from '../reply-guard.js'
import type { Change, FeedSink, WatchHost, WatchOptions, WatchTarget } from './watch-handle.js'

const MAX_WATCH_KEYS = 100
const FIRST_BACKOFF_MS = 250
const MAX_BACKOFF_MS = 15_000

function targetOf(target: WatchTarget): { prefix: string } | { keys: string[] } {
  if (typeof target === 'string') return { prefix: target }
  if (Array.isArray(target)) return { keys: [...(target as readonly string[])] }
  const t = target as { prefix?: unknown; keys?: unknown }
  if (typeof t.prefix === 'string') return { prefix: t.prefix }
  if (Array.isArray(t.keys)) return { keys: [...(t.keys as string[])] }
  throw new CausewayError('INVALID_OPTION', 'watch a prefix (a string) or keys (an array)')
}

interface OnlineEvents {
  addEventListener?(type: 'online', listener: () => void): void
  removeEventListener?(type: 'online', listener: () => void): void
}

/**
 * Waits `ms` before the next attempt, or less: until the watch is closed, the client finds the
 * gateway again (its `online` event), or the browser says it is online. After a long offline
 * spell the backoff has grown to many seconds; the other device's changes must not wait for it.
 * Resolves whether it was woken by a return online.
 */
function wait(ms: number, signal: AbortSignal, host: WatchHost): Promise<boolean> {
  return new Promise((resolve) => {
    const scope = globalThis as OnlineEvents
    const timer = setTimeout(() => done(false), ms)
    const online = () => done(true)
    const stop = () => done(false)
    const offOnline = host.onOnline(online)
    scope.addEventListener?.('online', online)
    signal.addEventListener('abort', stop, { once: true })
    function done(woken: boolean) {
      clearTimeout(timer)
      signal.removeEventListener('abort', stop)
      offOnline()
      scope.removeEventListener?.('online', online)
      resolve(woken)
    }
  })
}

/** Runs a watch until it is closed or fails for good, handing events to `sink`. */
export async function runFeed(
  host: WatchHost,
  rawTarget: WatchTarget,
  options: WatchOptions,
  sink: FeedSink,
): Promise<void> {
  const { parts, topology } = host
  const target = targetOf(rawTarget)
  if ('keys' in target) {
    if (target.keys.length === 0 || target.keys.length > MAX_WATCH_KEYS)
      throw new CausewayError('INVALID_OPTION', `watch 1 to ${MAX_WATCH_KEYS} keys, or a prefix`)
    for (const k of target.keys)
      if (typeof k !== 'string' || k === '')
        throw new CausewayError('INVALID_KEY', 'a watched key must be a non-empty string')
  }
  const level: ReadLevel =
    options.read === undefined ? parts.defaults.read : checkRead(options.read)
  const heartbeatMs = options.heartbeatMs ?? 15_000
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 1000 || heartbeatMs > 60_000)
    throw new CausewayError('INVALID_OPTION', 'heartbeatMs must be an integer in 1000..60000')
  const region =
    options.region === undefined ? parts.home : findRegion(parts.regions, options.region)
  const doFetch = options.fetch ?? globalThis.fetch
  const partitions =
    'prefix' in target
      ? Array.from({ length: topology.partitions }, (_, p) => p)
      : [...new Set(target.keys.map((k) => partitionOf(k, topology.partitions)))]
  const query =
    'prefix' in target
      ? `prefix=${encodeURIComponent(target.prefix)}`
      : `keys=${encodeURIComponent(target.keys.map((k) => encodeURIComponent(k)).join(','))}`
  const newest = new Map<string, { ts: string; dc: number }>()
  // Credentials only to trusted origins (`reply-guard.ts`): refused before anything is sent.
  checkCredentialsOrigin(parts.guard, region.url, parts.headers)
  const { maxReplyBytes } = parts.guard
  let cursor = options.since
  let backoff = FIRST_BACKOFF_MS

  while (!sink.closed) {
    const headers: Record<string, string> = { ...parts.headers, accept: 'text/event-stream' }
    if (level !== 'eventual') {
      const items: string[] = []
      for (const p of partitions) {
        const need = parts.session.readNeed(p, level)
        const text = need && formatReadNeed(need)
        if (text !== undefined) items.push(`${p}=${text}`)
      }
      if (items.length > 0) headers[HEADER_AFTER] = items.join(';')
    }
    let url = `${region.url}/v1/watch?${query}&level=${level}&heartbeatMs=${heartbeatMs}`
    if (cursor !== undefined) url += `&since=${encodeURIComponent(cursor)}`
    const connection = new AbortController()
    const stop = () => connection.abort()
    sink.signal.addEventListener('abort', stop, { once: true })
    let watchdog: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      clearTimeout(watchdog)
      watchdog = setTimeout(stop, heartbeatMs * 2 + 5000)
    }
    let failure: unknown
    try {
      arm()
      const res = await doFetch(url, { headers, signal: connection.signal })
      const type = res.headers.get('content-type') ?? ''
      if (!res.ok || !type.startsWith('text/event-stream')) {
        const text = await res.text()
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = undefined
        }
        const error = CausewayError.fromBody(body, res.status)
        if (res.status === 429 || res.status >= 500 || error.code === 'SESSION_NOT_AVAILABLE') {
          const after = Number(res.headers.get('retry-after'))
          failure = error
          if (Number.isFinite(after) && after > 0) backoff = Math.max(backoff, after * 1000)
        } else {
          sink.end(error)
          return
        }
      } else {
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
        let ended: CausewayError | undefined
        // Characters fed since the last whole event: what the parser holds of the next one.
        let pending = 0
        const parser = createParser({
          onEvent: (event: EventSourceMessage) => {
            pending = 0
            if (ended !== undefined) return
            arm()
            if (event.event === 'heartbeat') {
              if (event.id !== undefined) {
                cursor = event.id
                sink.live(event.id)
              }
              backoff = FIRST_BACKOFF_MS
            } else if (event.event === 'change') {
              let change: Change | undefined
              try {
                change = changeOf(event.data, event.id ?? cursor ?? '', host)
              } catch (error) {
                ended = error as CausewayError
                return
              }
              if (event.id !== undefined) cursor = event.id
              if (change === undefined) return
              if (isStale(change, newest, host)) {
                if (event.id !== undefined) sink.cursor(event.id)
                return
              }
              sink.change(change)
            } else if (event.event === 'error') {
              let body: unknown
              try {
                body = JSON.parse(event.data)
              } catch {
                body = undefined
              }
              ended = CausewayError.fromBody(body)
            }
          },
        })
        for (;;) {
          const { value, done } = await reader.read()
          if (done || sink.closed) break
          parser.feed(value)
          if (ended !== undefined) break
          pending += value.length
          // One event larger than a whole reply may be: the gateway is not to be trusted.
          if (pending > maxReplyBytes) {
            ended = replyTooLarge(url, maxReplyBytes)
            break
          }
        }
        await reader.cancel().catch(() => {})
        if (ended !== undefined) {
          // A reply the SDK refuses ends the watch: reconnecting would get the same.
          if (ended.status >= 500 && !distrusted(ended)) failure = ended
          else {
            sink.end(ended)
            return
          }
        }
      }
    } catch (error) {
      if (sink.closed) return
      failure = error
    } finally {
      clearTimeout(watchdog)
      sink.signal.removeEventListener('abort', stop)
      connection.abort()
    }
    if (sink.closed) return
    // Ended or failed: resume from the cursor after a pause (longer each time it fails at once).
    const woken = await wait(failure === undefined ? FIRST_BACKOFF_MS : backoff, sink.signal, host)
    if (woken) backoff = FIRST_BACKOFF_MS
    else if (failure !== undefined) backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
  }
}

/** Whether a feed's error is the SDK refusing what the gateway sent. */
function distrusted(error: CausewayError): boolean {
  return error.code === 'INVALID_REPLY' || error.code === 'REPLY_TOO_LARGE'
}

/**
 * A change event's data as a {@link Change}, recorded in the session and the read cache; throws
 * `INVALID_REPLY` for a position or time beyond the gateway's bounds (it would go out in the
 * session's next vector).
 */
function changeOf(data: string, cursor: string, host: WatchHost): Change | undefined {
  let e: ChangeEvent
  try {
    e = JSON.parse(data) as ChangeEvent
  } catch {
    return undefined
  }
  if (typeof e?.key !== 'string' || typeof e.p !== 'number' || typeof e.dc !== 'number')
    return undefined
  const { parts, topology } = host
  if (
    !Number.isInteger(e.p) ||
    e.p < 0 ||
    e.p >= topology.partitions ||
    !Number.isInteger(e.dc) ||
    e.dc < 0 ||
    e.dc >= topology.regions.length
  )
    throw invalidReply('change', `partition ${e.p} or region ${e.dc} does not exist`)
  checkReplyBounds('change', undefined, [['idx', e.idx, 0]], [['ts', e.ts]])
  if (!isHlc(e.ts)) throw invalidReply('change', `ts ${String(e.ts)} is not an HLC`)
  // An event does not say the epoch its origin issued the entry in: the session keeps the index,
  // which a gateway judges by its histories alone.
  parts.session.observeRead(e.p, { dc: e.dc, idx: e.idx, ts: e.ts })
  parts.changed()
  const change: Change = {
    key: e.key,
    partition: e.p,
    dc: e.dc,
    idx: e.idx,
    ts: e.ts,
    deleted: e.deleted,
    value: e.value,
    cursor,
  }
  if (e.set !== undefined) {
    change.set = { added: e.set.added, removed: e.set.removed }
    host.recordSet(e.key, e.set.added, e.set.removed)
    return change
  }
  const entry: KeyEntry = {
    t: 'k',
    found: !e.deleted,
    epoch: topology.epochs[e.p] ?? 1,
    region: parts.home.id,
    replica: 0,
    ts: e.ts,
    dc: e.dc,
    idx: e.idx,
  }
  if (!e.deleted && 'value' in e) entry.value = e.value
  if (e.siblings !== undefined) {
    const versions: Sibling[] = e.siblings.map((s) => ({
      value: s.value,
      deleted: !('value' in s),
      ts: s.ts,
      dc: s.dc,
    }))
    change.versions = versions
    change.siblings = versions.filter((v) => !v.deleted).map((v) => v.value)
    if (e.context !== undefined) change.context = e.context
    entry.versions = e.siblings.map((s) => ({
      ...('value' in s ? { value: s.value } : {}),
      deleted: !('value' in s),
      ts: s.ts,
      dc: s.dc,
    }))
    if (e.context !== undefined) entry.context = e.context
  }
  host.recordKey(e.key, entry)
  return change
}

/** Whether a last-writer-wins change is older than one already delivered for its key. */
function isStale(
  change: Change,
  newest: Map<string, { ts: string; dc: number }>,
  host: WatchHost,
): boolean {
  if (change.set !== undefined || host.conflictMode(change.key) === 'siblings') return false
  const seen = newest.get(change.key)
  if (seen !== undefined && (change.ts < seen.ts || (change.ts === seen.ts && change.dc < seen.dc)))
    return true
  newest.set(change.key, { ts: change.ts, dc: change.dc })
  if (newest.size > 10_000) newest.delete(newest.keys().next().value!)
  return false
}
