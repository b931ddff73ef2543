/**
 * The internal shipping endpoint takes versioned envelopes (`ship-envelope.ts`) and hands them,
 * whole, to the receiving region's leader, here a real LevelDB replica: an envelope of another
 * version, or with an entry kind this gateway does not know, is refused with
 * `UNSUPPORTED_LOG_FORMAT` and counted, and nothing of it is applied.
 */
import { HLC_ZERO, type ShipEnvelope, envelopeToWire, hlcFrom, shipEnvelope } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import type { ShippingReceiver } from '../../src/replication/shipping-receiver.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import { entry, ship } from '../support/log-entries.js'
import { sample } from './exposition.js'
import { FakeClusterService } from './fake-cluster-service.js'

const SECRET = 'cluster-secret-of-the-test'
const PATH = '/v1/internal/ship/0/0'

let leader: LevelPartitionReplica
let app: Gateway

beforeAll(async () => {
  // Region 1's leader of partition 0, in a cluster of two regions.
  leader = new LevelPartitionReplica({ region: 1, partition: 0, replica: 0, regions: 2 })
  await leader.open()
  const receiver: ShippingReceiver = {
    checkpoint: async () => leader.sv()[0]!,
    receive: (_partition, envelope) => leader.receive(envelope),
  }
  app = buildGateway({
    service: new FakeClusterService({ region: 1 }),
    regionUrls: ['http://a', 'http://b'],
    processMetrics: false,
    auth: { clusterSecret: SECRET },
    shipping: { receiver },
  })
})

afterAll(async () => {
  await app.close()
  await leader.close()
})

const post = (payload: unknown) =>
  app.inject({
    method: 'POST',
    url: PATH,
    headers: { authorization: `Bearer ${SECRET}` },
    payload: payload as object,
  })

const t = Date.now()
const entries = [1, 2, 3].map((i) => entry(0, i, `k${i}`, `"${i}"`, hlcFrom(t, i)))
const wire = (envelope: ShipEnvelope) => envelopeToWire(envelope)

describe('POST /v1/internal/ship/:partition/:origin', () => {
  it('refuses an envelope of an unknown version, applies nothing, and counts it', async () => {
    for (const v of [3, 0, '1', undefined]) {
      const res = await post({ ...wire(ship(0, entries)), v })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({
        code: 'UNSUPPORTED_LOG_FORMAT',
        details: { field: 'v', supported: [1, 2] },
      })
    }
    // A body of before envelopes had versions: the same answer.
    const old = await post({ entries: wire(ship(0, entries)).entries })
    expect(old.json()).toMatchObject({ code: 'UNSUPPORTED_LOG_FORMAT' })
    expect(leader.sv()).toEqual([0, 0])
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
    expect(sample(metrics, 'causeway_shipments_refused_total', { reason: 'version' })).toBe(5)
  })

  it('refuses an envelope with an entry of an unknown kind, whole, and counts it', async () => {
    const body = wire(ship(0, entries))
    body.entries[2] = { ...body.entries[2]!, kind: 'commit' } as never
    const res = await post(body)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({
      code: 'UNSUPPORTED_LOG_FORMAT',
      details: { field: 'kind', got: 'commit' },
    })
    expect(leader.sv()).toEqual([0, 0])
    expect(await leader.readLog(0, 0, 10)).toEqual([])
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
    expect(sample(metrics, 'causeway_shipments_refused_total', { reason: 'kind' })).toBe(1)
  })

  it('refuses a malformed envelope of the version it knows with INVALID_REQUEST', async () => {
    const good = wire(ship(0, entries))
    for (const body of [
      { ...good, from: 1 }, // not the origin of the path
      { ...good, last: 4 }, // more than it carries
      { ...good, epoch: 0 },
      { ...good, extra: true },
      { ...good, entries: [{ ...good.entries[0]!, value: '' }, ...good.entries.slice(1)] },
      { ...good, entries: [good.entries[0], good.entries[2]] }, // a hole
    ]) {
      const res = await post(body)
      expect(res.statusCode, JSON.stringify(body).slice(0, 200)).toBe(400)
      expect(res.json().code).toBe('INVALID_REQUEST')
    }
    expect(leader.sv()).toEqual([0, 0])
  })

  it('applies a good envelope at the leader and answers its checkpoint', async () => {
    const res = await post(wire(ship(0, entries)))
    expect(res.json()).toEqual({ checkpoint: 3 })
    expect(await leader.readLog(0, 0, 10)).toEqual(entries)
    // Resent (the sender's retry), it is skipped.
    expect((await post(wire(ship(0, entries.slice(1))))).json()).toEqual({ checkpoint: 3 })
    const del = entry(0, 4, 'k1', undefined, hlcFrom(t, 4))
    expect((await post(wire(ship(0, [del])))).json()).toEqual({ checkpoint: 4 })
    expect((await leader.read('k1')).version).toEqual({ ts: del.ts, dc: 0 })
    expect(HLC_ZERO < del.ts).toBe(true)
  })

  it("takes a version 2 envelope, with its sender's epoch history, in wire form", async () => {
    const next = entry(0, 5, 'k5', '"5"', hlcFrom(t, 5))
    const v2 = shipEnvelope(
      0,
      [
        { epoch: 1, first: 1, last: 4 },
        { epoch: 2, first: 5 },
      ],
      [next],
    )
    expect(v2.v).toBe(2)
    const body = wire(v2)
    expect(body.epochs).toEqual([
      [1, 1, 4],
      [2, 5],
    ])
    expect((await post(body)).json()).toEqual({ checkpoint: 5 })
    // An epoch history that is not one is refused whole.
    const bad = await post({
      ...body,
      epochs: [
        [2, 5],
        [1, 1],
      ],
    })
    expect(bad.json()).toMatchObject({ code: 'INVALID_REQUEST' })
  })
})
