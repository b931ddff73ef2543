/**
 * A fake transport that plays a gateway: it answers `GET /v1/topology` from a fixture, records
 * every request, and answers the others from a script of replies, in order.
 */
import {
  CausewayError,
  DEFAULT_LIMITS,
  type SessionJSON,
  type Topology,
  hlcFrom,
} from '@causeway/core'
import { expect, vi } from 'vitest'
import type { Transport, TransportRequest, TransportResponse } from '../src/transport.js'

/** Three regions; `ap`'s URL is relative to the gateway the client connects to. */
export function fixtureTopology(overrides: Partial<Topology> = {}): Topology {
  return {
    cluster: 'test-cluster',
    protocol: 1,
    region: 0,
    regions: [
      { id: 0, name: 'us', url: 'http://us.test' },
      { id: 1, name: 'eu', url: 'http://eu.test/' },
      { id: 2, name: 'ap', url: '/ap' },
    ],
    partitions: 4,
    replicas: 3,
    epochs: [1, 1, 1, 1],
    limits: { ...DEFAULT_LIMITS },
    shipping: 'fifo',
    ...overrides,
  }
}

/**
 * A session of the fixture's cluster that has read (9 from us, 3 from eu) and written (7 in us,
 * 4 in ap) partition 1; `dtR` is 120 ms, `dtW` 100 ms.
 */
export function sessionJSON(overrides: Partial<SessionJSON> = {}): SessionJSON {
  return {
    v: 2,
    cluster: 'test-cluster',
    regions: 3,
    partitions: 4,
    dtR: hlcFrom(120, 0),
    dtW: hlcFrom(100, 0),
    p: { 1: { r: [9, 3, 0], w: [7, 0, 4], re: [1, 1, 0], we: [1, 0, 1] } },
    ...overrides,
  }
}

/** A request as the fake saw it, with its URL taken apart. */
export interface Recorded {
  method: string
  url: string
  origin: string
  path: string
  /** The decoded key of a `/v1/kv/:key` request. */
  key: string | undefined
  query: Record<string, string>
  /** A copy, taken when the request was sent. */
  headers: Record<string, string>
  body: unknown
  signal: AbortSignal | undefined
}

/** A scripted reply: a response, an error to throw (a network failure), or a function of the request. */
export type Scripted =
  | TransportResponse
  | { throws: unknown }
  | ((req: Recorded) => TransportResponse | Promise<TransportResponse>)

export class FakeGateway implements Transport {
  readonly requests: Recorded[] = []
  readonly script: Scripted[] = []
  topology: Topology
  closed = 0

  constructor(topology: Topology = fixtureTopology()) {
    this.topology = topology
  }

  /** Queues replies for the next kv requests. */
  reply(...replies: Scripted[]): this {
    this.script.push(...replies)
    return this
  }

  /** The recorded kv requests (the topology fetch left out). */
  get kv(): Recorded[] {
    return this.requests.filter((r) => r.path.startsWith('/v1/kv/'))
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    const url = new URL(req.url)
    const rec: Recorded = {
      method: req.method,
      url: req.url,
      origin: url.origin,
      path: url.pathname,
      key: url.pathname.startsWith('/v1/kv/')
        ? decodeURIComponent(url.pathname.slice('/v1/kv/'.length))
        : undefined,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body: req.body === undefined ? undefined : JSON.parse(req.body),
      signal: req.signal,
    }
    this.requests.push(rec)
    if (url.pathname.endsWith('/v1/topology')) return { status: 200, body: this.topology }
    const next = this.script.shift()
    if (next === undefined)
      throw new Error(`fake gateway: no reply scripted for ${req.method} ${req.url}`)
    if (typeof next === 'function') return next(rec)
    if ('throws' in next) throw next.throws
    return next
  }

  close(): void {
    this.closed++
  }
}

/** A successful read reply. */
export function readOk(fields: Record<string, unknown> = {}): TransportResponse {
  return {
    status: 200,
    body: {
      found: true,
      value: 'v',
      ts: '0000000000010000',
      dc: 0,
      idx: 1,
      epoch: 1,
      region: 0,
      replica: 0,
      waitedMs: 0,
      ...fields,
    },
  }
}

/** A successful write reply. */
export function writeOk(fields: Record<string, unknown> = {}): TransportResponse {
  return {
    status: 200,
    body: { ts: '0000000000010000', dc: 0, idx: 1, epoch: 1, region: 0, ...fields },
  }
}

/** A `SESSION_NOT_AVAILABLE` reply. */
export function notAvailable(details: Record<string, unknown> = {}): TransportResponse {
  return {
    status: 503,
    body: {
      statusCode: 503,
      code: 'SESSION_NOT_AVAILABLE',
      message: 'no replica covers the session before the deadline',
      details: { need: { 0: 5 }, sv: { 0: 3 }, ...details },
    },
  }
}

/**
 * A reply that plays a replica waiting out all it was allowed (`timeoutMs`) and a 20 ms round trip
 * on fake timers (`vi.useFakeTimers`), then `reply` (by default `SESSION_NOT_AVAILABLE`).
 * `waitsAtMost` plays a gateway that waits less than asked.
 */
export function waitsOut(
  reply: TransportResponse = notAvailable(),
  waitsAtMost = Infinity,
): (req: Recorded) => TransportResponse {
  return (req) => {
    vi.advanceTimersByTime(Math.min(Number(req.query.timeoutMs), waitsAtMost) + 20)
    return reply
  }
}

/** A transport whose requests never answer; they reject only when their signal aborts. */
export function hangingTransport(): Transport & { requests: TransportRequest[] } {
  const requests: TransportRequest[] = []
  return {
    requests,
    request(req) {
      if (req.url.endsWith('/v1/topology')) {
        return Promise.resolve({ status: 200, body: fixtureTopology() })
      }
      requests.push(req)
      return new Promise((_, reject) => {
        if (req.signal?.aborted) reject(new Error('aborted'))
        req.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
      })
    },
  }
}

/** The error a call rejects with; fails the test when the call resolves or throws something else. */
export async function rejection(promise: Promise<unknown>): Promise<CausewayError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(CausewayError)
    return error as CausewayError
  }
  throw new Error('expected a rejection')
}
