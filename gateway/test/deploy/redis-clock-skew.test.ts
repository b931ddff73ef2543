/**
 * Regions whose wall clocks disagree, on the real thing: `causeway dev --backend redis` with
 * region 1's clock a minute ahead of region 0's (`--clock-offset`, dev only), twice the default
 * `maxSkewMs`. An SDK session that writes in region 1 and then in region 0 is served in both (its
 * writes ordered as it made them), while a `causeway-dt` further ahead than every region's clock
 * is still refused with `CLOCK_SKEW_EXCEEDED`, in either region.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { connect } from '@causeway/client'
import { hlcFrom, hlcMillis } from '@causeway/core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { putKey } from '../support/http-calls.js'

const MINUTE = 60_000

let dev: RedisDevCluster

beforeAll(async () => {
  dev = await startRedisDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 1,
    port: 0,
    clockOffsetsMs: [0, MINUTE],
    skewWaitMs: 1000,
  })
}, 60_000)

afterAll(async () => {
  await dev?.close()
}, 60_000)

it('serves a session moving between regions whose clocks are a minute apart', async () => {
  const db = await connect({ url: dev.urls[0]! })
  try {
    let last = '0000000000000000'
    for (let i = 0; i < 10; i++) {
      const ahead = await db.put(`skew:ahead:${i}`, i, { region: 1 })
      expect(hlcMillis(ahead.ts)).toBeGreaterThan(Date.now() + MINUTE - 5000)
      // Depends on a time a minute ahead of region 0's clock: once refused, now served.
      const behind = await db.put(`skew:behind:${i}`, i, { region: 0 })
      expect(behind.ts > ahead.ts).toBe(true)
      expect(ahead.ts > last).toBe(true)
      last = behind.ts
    }
    expect((await db.get('skew:ahead:9', { region: 0 })).value).toBe(9)
    expect((await db.get('skew:behind:9', { region: 1 })).value).toBe(9)
  } finally {
    await db.close()
  }
}, 60_000)

it('still refuses a dependency time further ahead than every region clock', async () => {
  // Region 0 knows region 1's clock from the test above; 40 s past it is not a session's time.
  const dt = hlcFrom(Date.now() + MINUTE + 40_000, 0)
  for (const url of dev.urls) {
    const res = await putKey(url, 'skew:forged', 1, { 'causeway-dt': dt })
    expect(res.status).toBe(400)
    expect(res.body['code']).toBe('CLOCK_SKEW_EXCEEDED')
  }
}, 30_000)
