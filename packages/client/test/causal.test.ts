/**
 * The SDK on a cluster with causal shipping (two regions, a WAN delay, followers that lag): the
 * session's vector clock, the `causal` levels, a client that switches region and waits there for
 * what it has seen, with a deadline, and the same levels refused by a FIFO cluster.
 */
import { partitionOf } from '@causeway/core'
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CausewayError, SessionNotAvailableError, connect } from '../src/index.js'
import { recordingTransport } from './support/recording-transport.js'

const WAN_DELAY_MS = 300

let causal: { urls: string[]; close(): Promise<void> }
let fifo: { urls: string[]; close(): Promise<void> }

beforeAll(async () => {
  ;[causal, fifo] = await Promise.all([
    startDevCluster({
      regions: 2,
      partitions: 4,
      replicas: 2,
      port: 0,
      replicaLagMs: 30,
      wanDelayMs: WAN_DELAY_MS,
      shipping: 'causal',
    }),
    startDevCluster({ regions: 2, partitions: 2, replicas: 1, port: 0 }),
  ])
})

afterAll(async () => {
  await Promise.all([causal?.close(), fifo?.close()])
})

/** The default transport, recording the requests the test looks at. */
const recording = () => recordingTransport((req) => req.url.includes('/v1/kv/'))

let n = 0
const fresh = (name: string) => `${name}:${Date.now()}:${n++}`

describe('the SDK on a causal cluster', () => {
  it('learns the mode, and keeps a vector clock of what it sees', async () => {
    const transport = recording()
    const db = await connect({
      url: causal.urls[0]!,
      transport,
      defaults: { read: 'causal', write: 'causal' },
    })
    expect(db.topology.shipping).toBe('causal')
    expect(db.session.clock()).toEqual(['0000000000000000', '0000000000000000'])
    const w = await db.put(fresh('c'), 1)
    expect(db.session.clock()[0]).toBe(w.ts)
    // The next causal call carries the clock, and a causal write depends on all of it.
    await db.get(fresh('c'))
    expect(transport.sent[1]!.headers['causeway-clock']).toBe(`${w.ts},0`)
    expect(JSON.parse(JSON.stringify(db.session)).vc).toEqual([w.ts, '0000000000000000'])
    await db.close()
  })

  it('after a write in one region, a causal read of any key in the other waits for it', async () => {
    const db = await connect({
      url: causal.urls[0]!,
      defaults: { read: 'causal', write: 'causal' },
    })
    const x = fresh('x')
    const y = fresh('y')
    const written = await db.put(x, 'posted')
    const acked = performance.now()
    // Another key, in the other region: served only once that region has applied the write.
    const other = await db.get(y, { region: 1, timeoutMs: 5_000 })
    const waited = performance.now() - acked
    expect(other.found).toBe(false)
    expect(waited).toBeGreaterThanOrEqual(WAN_DELAY_MS - 20)
    // So x is there now, without any wait for its own vector.
    const read = await db.get(x, { region: 1, timeoutMs: 100 })
    expect(read.value).toBe('posted')
    expect(read.ts).toBe(written.ts)
    await db.close()
  })

  it('carries the clock to another client through the session', async () => {
    const a = await connect({ url: causal.urls[0]!, defaults: { read: 'causal', write: 'causal' } })
    const x = fresh('x')
    await a.put(x, 'first')
    // The session moves to a client of the other region (another device).
    const b = await connect({
      url: causal.urls[1]!,
      session: JSON.parse(JSON.stringify(a.session)),
      defaults: { read: 'causal', write: 'causal' },
    })
    const read = await b.get(x, { timeoutMs: 5_000 })
    expect(read.value).toBe('first')
    await Promise.all([a.close(), b.close()])
  })

  it('fails with SESSION_NOT_AVAILABLE when the region cannot catch up in time', async () => {
    const db = await connect({
      url: causal.urls[0]!,
      defaults: { read: 'causal', write: 'causal' },
    })
    await db.put(fresh('x'), 1)
    const error = await db
      .get(fresh('y'), { region: 1, timeoutMs: 100, fallback: 'none' })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect((error as SessionNotAvailableError).details).toMatchObject({ reason: 'site-time' })
    await db.close()
  })

  it('still serves session reads, which do not wait for other keys', async () => {
    const db = await connect({ url: causal.urls[0]! })
    const x = fresh('x')
    await db.put(x, 1)
    // In another partition than x: a session read of x's own partition waits for the write.
    let y = fresh('y')
    while (partitionOf(y, 4) === partitionOf(x, 4)) y = fresh('y')
    const r = await db.get(y, { region: 1, read: 'session' })
    expect(r.found).toBe(false)
    // Served at once: the write in region 0 is no concern of a session read of another key.
    expect(r.waitedMs).toBeLessThan(WAN_DELAY_MS / 2)
    await db.close()
  })
})

describe('the causal levels on a FIFO cluster', () => {
  it('are refused with INVALID_LEVEL, by the SDK and by the gateway', async () => {
    const transport = recording()
    const db = await connect({ url: fifo.urls[0]!, transport })
    await expect(db.get('k', { read: 'causal' })).rejects.toMatchObject({ code: 'INVALID_LEVEL' })
    await expect(db.put('k', 1, { write: 'causal' })).rejects.toMatchObject({
      code: 'INVALID_LEVEL',
    })
    expect(transport.sent).toEqual([])
    const res = await fetch(`${fifo.urls[0]}/v1/kv/k?level=causal`)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { code: string }).code).toBe('INVALID_LEVEL')
    await db.close()
    expect(CausewayError).toBeDefined()
  })
})
