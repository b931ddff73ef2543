/**
 * The SDK's own cost per call (validation, partition, vector, headers, deadline, reply checks,
 * session update), measured through a transport that answers at once. It must stay in
 * microseconds: a network round trip is 100 µs on loopback and milliseconds across regions.
 * The bound is loose (about 10x what this machine measures) so a busy CI box does not flake.
 */
import { describe, expect, it } from 'vitest'
import { connect } from '../src/index.js'
import type { Transport } from '../src/transport.js'
import { fixtureTopology } from './fake-gateway.js'

const READ = {
  status: 200,
  body: {
    found: true,
    value: { n: 1 },
    ts: '0000000000640000',
    dc: 0,
    idx: 3,
    epoch: 1,
    region: 0,
    replica: 0,
    waitedMs: 0,
  },
}
const WRITE = { status: 200, body: { ts: '0000000000640000', dc: 0, idx: 3, epoch: 1, region: 0 } }

const instant: Transport = {
  request: async (req) =>
    req.url.endsWith('/v1/topology')
      ? {
          status: 200,
          body: fixtureTopology({ partitions: 64, epochs: new Array<number>(64).fill(1) }),
        }
      : req.method === 'GET'
        ? READ
        : WRITE,
}

describe('cost of a call in the SDK', () => {
  it('get and put cost microseconds, not milliseconds', async () => {
    const db = await connect({ url: 'http://us.test', transport: instant })
    const calls = 10_000
    let best = { get: Infinity, put: Infinity }
    for (let round = 0; round < 3; round++) {
      let start = performance.now()
      for (let i = 0; i < calls; i++) await db.get('user:' + (i % 500))
      const get = ((performance.now() - start) * 1000) / calls
      start = performance.now()
      for (let i = 0; i < calls; i++) await db.put('user:' + (i % 500), { n: i })
      const put = ((performance.now() - start) * 1000) / calls
      best = { get: Math.min(best.get, get), put: Math.min(best.put, put) }
    }
    console.info(`SDK cost per call: get ${best.get.toFixed(1)} µs, put ${best.put.toFixed(1)} µs`)
    expect(best.get).toBeLessThan(100)
    expect(best.put).toBeLessThan(100)
    // The session holds only what was touched: 64 partitions at most, one row each.
    expect(db.session.touched().length).toBeLessThanOrEqual(64)
  })
})
