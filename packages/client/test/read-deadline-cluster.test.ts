/**
 * Read deadlines against a real embedded cluster over HTTP on 127.0.0.1: two regions whose
 * shipping link is delayed far longer than the reads' budgets, so a region that needs the other
 * region's writes cannot cover the session in time. A read then either falls back home and
 * succeeds inside its deadline, or throws `SESSION_NOT_AVAILABLE` at about the deadline (not
 * half of it, as it once did).
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SessionNotAvailableError, connect } from '../src/index.js'
import { recordingTransport } from './support/recording-transport.js'

/** Longer than any budget below: nothing ships between the regions while a test reads. */
const WAN_DELAY_MS = 4000
const BUDGET_MS = 1500
/** A replica may wait until the budget less its reply margin (10%, at most 200 ms). */
const WAIT_UNTIL_MS = BUDGET_MS - Math.min(200, BUDGET_MS / 10)
/** How late past the deadline a call may settle on a busy shared machine. */
const SLACK_MS = 500

let cluster: { urls: string[]; close(): Promise<void> }

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 3,
    port: 0,
    replicaLagMs: 20,
    wanDelayMs: WAN_DELAY_MS,
  })
})

afterAll(async () => {
  await cluster?.close()
})

/** The default transport, recording the requests the test looks at. */
const recording = () =>
  recordingTransport((req) => req.method === 'GET' && req.url.includes('/v1/kv/'))

let n = 0
const fresh = (name: string) => `${name}:${Date.now()}:${n++}`

describe('read deadlines on a real cluster with a slow WAN', () => {
  it('a read in the other region that cannot cover in time falls back home and succeeds within the deadline', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const key = fresh('fallback')
    const w = await db.put(key, { v: 1 })
    const started = performance.now()
    const r = await db.get(key, { region: 1, read: 'read-your-writes', timeoutMs: BUDGET_MS })
    const elapsed = performance.now() - started
    expect(r).toMatchObject({ found: true, value: { v: 1 }, ts: w.ts, region: 0, attempts: 2 })
    expect(elapsed).toBeLessThan(BUDGET_MS)
    // Region 1 had its half of the wait; home, where the write is, answered at once.
    expect(elapsed).toBeGreaterThan(WAIT_UNTIL_MS / 2 - 50)
    expect(transport.sent.map((q) => q.url.slice(0, cluster.urls[0]!.length))).toEqual([
      cluster.urls[1],
      cluster.urls[0],
    ])
    const vectors = transport.sent.map((q) => q.headers['causeway-after'])
    expect(vectors[0]).toBe(`0:${w.idx}@1`)
    expect(vectors[1]).toBe(vectors[0])
    // The home reply moved the session as any read does.
    expect(db.session.row(db.partitionOf(key))!.hrm[0]).toBe(w.idx)
    await db.close()
  })

  it('without fallback the same read throws SESSION_NOT_AVAILABLE at about the deadline, not half of it', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const key = fresh('nofallback')
    await db.put(key, 1)
    const started = performance.now()
    const error = await db
      .get(key, { region: 1, read: 'read-your-writes', timeoutMs: BUDGET_MS, fallback: 'none' })
      .catch((e: unknown) => e)
    const elapsed = performance.now() - started
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect((error as SessionNotAvailableError).details).toMatchObject({
      tried: [{ region: 1, code: 'SESSION_NOT_AVAILABLE' }],
    })
    expect(elapsed).toBeGreaterThanOrEqual(WAIT_UNTIL_MS - 20)
    expect(elapsed).toBeLessThan(BUDGET_MS + SLACK_MS)
    await db.close()
  })

  it('at home, a read the leader cannot cover yet waits for the whole budget before it throws', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const key = fresh('home')
    // Written in region 1: home cannot have it before the WAN delay.
    await db.put(key, 1, { region: 1 })
    const started = performance.now()
    const error = await db
      .get(key, { read: 'read-your-writes', timeoutMs: BUDGET_MS })
      .catch((e: unknown) => e)
    const elapsed = performance.now() - started
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    // The gateway served `any` from its leader (no replica covered), which said "not yet".
    expect((error as SessionNotAvailableError).details).toMatchObject({ role: 'leader' })
    expect(elapsed).toBeGreaterThanOrEqual(WAIT_UNTIL_MS - 20)
    expect(elapsed).toBeLessThan(BUDGET_MS + SLACK_MS)
    await db.close()
  })
})
