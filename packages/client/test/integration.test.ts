/**
 * The SDK against a real embedded cluster (two regions, followers that lag, a WAN delay between
 * the regions), over real HTTP on 127.0.0.1.
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CausewayError, SessionNotAvailableError, connect } from '../src/index.js'
import { connect as connectNode } from '../src/node.js'
import { recordingTransport } from './support/recording-transport.js'

const WAN_DELAY_MS = 400
const REPLICA_LAG_MS = 40

let cluster: { urls: string[]; close(): Promise<void> }

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 3,
    port: 0,
    replicaLagMs: REPLICA_LAG_MS,
    wanDelayMs: WAN_DELAY_MS,
  })
})

afterAll(async () => {
  await cluster?.close()
})

/** The default transport, recording the requests the test looks at. */
const recording = () => recordingTransport((req) => req.url.includes('/v1/kv/'))

let n = 0
/** A key no other test touches. */
const fresh = (name: string) => `${name}:${Date.now()}:${n++}`

describe('SDK against a real cluster', () => {
  it('learns the topology of both regions', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    expect(db.regions.map((r) => r.id)).toEqual([0, 1])
    expect(db.regions[1]!.url).toBe(cluster.urls[1])
    expect(db.home.id).toBe(0)
    expect(db.topology.partitions).toBe(4)
    await db.close()
  })

  it('read-your-writes across regions waits for shipping; eventual does not see the write', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const key = fresh('ryw')
    const w = await db.put(key, { v: 1 })
    expect(w.region).toBe(0)

    // Eventual, straight after the write: region 1 cannot have it yet (the WAN delay is 400 ms).
    const stale = await db.get(key, { region: 1, read: 'eventual' })
    expect(stale.found).toBe(false)

    const started = Date.now()
    const r = await db.get(key, { region: db.regions[1]!.name, read: 'read-your-writes' })
    expect(r).toMatchObject({ found: true, value: { v: 1 }, ts: w.ts, region: 1, attempts: 1 })
    // It was served in region 1 after waiting for the shipper, not by falling back home.
    expect(Date.now() - started).toBeGreaterThan(WAN_DELAY_MS / 2)
    await db.close()
  })

  it('monotonic reads: a read in the other region never goes back in time', async () => {
    const writer = await connect({ url: cluster.urls[0]! })
    const reader = await connect({ url: cluster.urls[0]! })
    const key = fresh('mr')
    await writer.put(key, 1)
    const w2 = await writer.put(key, 2)

    const first = await reader.get(key, { read: 'monotonic-reads', replica: 'leader' })
    expect(first.value).toBe(2)
    // Region 1 has neither version yet; the session makes it wait for version 2.
    const second = await reader.get(key, { region: 1, read: 'monotonic-reads' })
    expect(second.value).toBe(2)
    expect(second.ts! >= first.ts!).toBe(true)
    expect(second.ts).toBe(w2.ts)
    // And a lagging follower of the home region too.
    const third = await reader.get(key, { read: 'monotonic-reads', replica: 'follower' })
    expect(third.value).toBe(2)
    await writer.close()
    await reader.close()
  })

  it('a session restored into a second client (in the other region) keeps read-your-writes', async () => {
    const a = await connect({ url: cluster.urls[0]! })
    const key = fresh('restore')
    await a.put(key, 'from a')
    const saved = JSON.stringify(a.session)
    await a.close()

    const b = await connect({ url: cluster.urls[1]!, session: saved })
    expect(b.home.id).toBe(1)
    const r = await b.get(key, { read: 'read-your-writes' })
    expect(r).toMatchObject({ found: true, value: 'from a', region: 1 })

    const foreign = { ...JSON.parse(saved), cluster: 'some-other-cluster' }
    const error = await connect({ url: cluster.urls[1]!, session: foreign }).catch((e) => e)
    expect(error).toBeInstanceOf(CausewayError)
    expect((error as CausewayError).code).toBe('FOREIGN_SESSION')
    await b.close()
  })

  it('falls back to the home region when the other region cannot serve in time, same vector', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const key = fresh('retry')
    await db.put(key, 'v')
    // Region 1 may wait half of 300 ms, less than the WAN delay: it cannot cover the write in time.
    const r = await db.get(key, { region: 1, read: 'read-your-writes', timeoutMs: 300 })
    expect(r).toMatchObject({ found: true, value: 'v', region: 0 })
    expect(r.attempts).toBeGreaterThan(1)
    const reads = transport.sent.filter((q) => q.method === 'GET')
    expect(reads.at(-1)!.url.startsWith(cluster.urls[0]!)).toBe(true)
    expect(new Set(reads.map((q) => q.headers['causeway-after'])).size).toBe(1)
    expect(reads[0]!.headers['causeway-after']).toMatch(/^0:\d+@1$/)
    await db.close()
  })

  it('the Node entry (keep-alive node:http transport) gives the same guarantees', async () => {
    const db = await connectNode({ url: cluster.urls[1]! })
    const key = fresh('node')
    const w = await db.put(key, [1, 2, 3], { durability: 'majority' })
    expect(w.region).toBe(1)
    const r = await db.get(key, { region: 0, read: 'session' })
    expect(r).toMatchObject({ found: true, value: [1, 2, 3], ts: w.ts, region: 0 })
    await db.delete(key, { region: 0 })
    // The delete went to region 0; reading it back at home (region 1) waits for it to ship.
    const gone = await db.get(key, { read: 'read-your-writes' })
    expect(gone).toMatchObject({ found: false, value: undefined, region: 1 })
    await db.close()
  })

  it('throws SessionNotAvailableError with need and sv when retries are off', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const key = fresh('sna')
    await db.put(key, 'v')
    const error = await db
      .get(key, { region: 1, read: 'read-your-writes', timeoutMs: 200, retry: false })
      .catch((e) => e)
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect(error.code).toBe('SESSION_NOT_AVAILABLE')
    expect(error.details.need).toBeDefined()
    expect(error.details.sv).toBeDefined()
    await db.close()
  })
})
