// k6's modules exist only inside k6; their types come with this file wherever it is compiled.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="./k6-modules.d.ts" />
/**
 * A `Transport` for the SDK on k6's `k6/http`, so every k6 virtual user runs the real SDK and
 * carries a real session (hrm/hwm, dtR/dtW). `http.asyncRequest` returns a promise, so the SDK's
 * async API works unchanged inside an `async` k6 iteration; only the transport knows it is in k6.
 *
 * It also keeps what a load test measures per call: the time spent on the wire (k6's own
 * request timings, microsecond precision, plus any emulated inter-region delay), so a script
 * can report per-operation latency that includes retries.
 */
import http from 'k6/http'
import {
  type Causeway,
  type ReadLevel,
  type Transport,
  type TransportRequest,
  type TransportResponse,
  type WriteLevel,
} from '@causeway/client'
import { HEADER_AFTER, HEADER_WAITED, formatReadNeed } from '@causeway/core'

/** Options of {@link k6Transport}. */
export interface K6TransportOptions {
  /**
   * Tags added to every request's k6 metrics (`http_req_duration`, ...). The transport adds
   * `name` (the route, so per-key URLs do not each become a time series), `op` and `level`.
   * @default {}
   */
  tags?: Record<string, string>
  /**
   * Emulated one-way network delay, in ms, to the gateways of regions other than `home`: half a
   * round trip is waited before sending and half after the reply, so the remote gateway sees
   * the request when a real one would.
   * @default 0
   */
  remoteDelayMs?: number
  /**
   * Base URL of the home region's gateway (the one that is not delayed).
   * @default undefined (no request is delayed)
   */
  home?: string
  /**
   * k6's own per-request timeout (the SDK's deadline aborts earlier through its signal).
   * @default '60s'
   */
  timeout?: string
}

/** A {@link Transport} for k6 that also counts the wire time of the calls it carried. */
export interface K6Transport extends Transport {
  /** Milliseconds spent on requests (HTTP time + emulated delay) since the last {@link reset}. */
  elapsedMs(): number
  /** Requests sent since the last {@link reset}. */
  requests(): number
  /**
   * How long the last write since the last {@link reset} waited at its leader for its
   * dependencies, as the gateway reports it (`causeway-waited-ms`, only from a gateway running
   * the "without HLC" ablation); undefined when no write reported one.
   */
  writeWaitMs(): number | undefined
  /** Starts a new measurement (call it before each SDK call you time). */
  reset(): void
  /**
   * Ablation "without HLC" (benchmarks only): from now on every put and delete carries the read
   * vector its write level implies (`hrm[:,p]` for writes-follow-reads, `hwm[:,p]` for monotonic
   * writes, both for session), taken from `db`'s session, so a gateway started with
   * `--without-hlc` can make the write wait for those dependencies. The SDK sends the same
   * positions itself since epochs (a leader refuses a write that follows a lost one); this keeps
   * the ablation's vector whatever the SDK sends.
   */
  sendWriteDependencies(db: Causeway): void
}

/** Which read vector stands for a write level's dependencies when writes wait instead of using HLC. */
const WRITE_DEPENDENCY: Record<WriteLevel, ReadLevel> = {
  eventual: 'eventual',
  'monotonic-writes': 'read-your-writes',
  'writes-follow-reads': 'monotonic-reads',
  session: 'session',
  causal: 'session',
}

const KV_PATH = '/v1/kv/'

/** A header of a k6 response, whatever the case of its name. */
function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value
  return undefined
}

function queryParam(url: string, name: string): string | undefined {
  const q = url.indexOf('?')
  if (q < 0) return undefined
  for (const pair of url.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=')
    if (pair.slice(0, eq) === name) return decodeURIComponent(pair.slice(eq + 1))
  }
  return undefined
}

/** The route and operation of a request, for tags. */
function describe(req: TransportRequest): { name: string; op: string; level: string } {
  const at = req.url.indexOf(KV_PATH)
  if (at < 0) {
    const path = req.url.replace(/^[a-z]+:\/\/[^/]+/, '').replace(/\?.*$/, '')
    return { name: path, op: path.split('/').pop() ?? path, level: '' }
  }
  const op = req.method === 'GET' ? 'get' : req.method === 'PUT' ? 'put' : 'delete'
  return { name: '/v1/kv/{key}', op, level: queryParam(req.url, 'level') ?? '' }
}

function keyOf(url: string): string {
  const at = url.indexOf(KV_PATH) + KV_PATH.length
  const end = url.indexOf('?', at)
  return decodeURIComponent(url.slice(at, end < 0 ? undefined : end))
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    else signal.addEventListener('abort', () => reject(signal.reason))
  })
}

/** Parses a reply body as JSON; a body that is not JSON becomes undefined (the SDK reports it). */
function parseBody(text: string | null): unknown {
  if (text === null || text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Creates a k6 transport; pass it to `connect({ url, transport })`. */
export function k6Transport(options: K6TransportOptions = {}): K6Transport {
  const baseTags = options.tags ?? {}
  const delay = options.remoteDelayMs ?? 0
  const home = options.home?.replace(/\/+$/, '')
  const timeout = options.timeout ?? '60s'
  let elapsed = 0
  let count = 0
  let writeWait: number | undefined
  let dependencies: Causeway | undefined

  function withDependencies(req: TransportRequest): Record<string, string> {
    if (!dependencies || req.method === 'GET' || !req.url.includes(KV_PATH)) return req.headers
    const level = queryParam(req.url, 'level') as WriteLevel | undefined
    const readLevel = WRITE_DEPENDENCY[level ?? 'session'] ?? 'session'
    const need = dependencies.session.readNeed(dependencies.partitionOf(keyOf(req.url)), readLevel)
    const header = need && formatReadNeed(need)
    return header === undefined ? req.headers : { ...req.headers, [HEADER_AFTER]: header }
  }

  async function send(req: TransportRequest): Promise<TransportResponse> {
    const remote = delay > 0 && home !== undefined && !req.url.startsWith(home + '/')
    const { name, op, level } = describe(req)
    const tags: Record<string, string> = { ...baseTags, name, op }
    if (level) tags.level = level
    if (remote) {
      tags.remote = 'true'
      await sleep(delay)
      elapsed += delay
    }
    const res = await http.asyncRequest(req.method, req.url, req.body ?? null, {
      headers: withDependencies(req),
      tags,
      timeout,
    })
    count++
    elapsed += res.timings.duration
    if (res.status === 0) throw new Error(`k6 request failed: ${res.error} (${res.error_code})`)
    if (req.method !== 'GET') {
      const waited = Number(header(res.headers, HEADER_WAITED) ?? NaN)
      if (Number.isFinite(waited)) writeWait = waited
    }
    if (remote) {
      await sleep(delay)
      elapsed += delay
    }
    return { status: res.status, body: parseBody(res.body) }
  }

  return {
    request(req) {
      const sent = send(req)
      return req.signal ? Promise.race([sent, aborted(req.signal)]) : sent
    },
    elapsedMs: () => elapsed,
    requests: () => count,
    writeWaitMs: () => writeWait,
    reset() {
      elapsed = 0
      count = 0
      writeWait = undefined
    },
    sendWriteDependencies(db) {
      dependencies = db
    },
  }
}
