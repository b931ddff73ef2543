/**
 * Hostile input on the Redis deployment, over HTTP (issue 12): the forged context whose counter
 * the Lua script used to commit (a growing shipping backlog, the other region's reads 503), the
 * bad-input table of `docs/security.md`, stored values that do not decode, what the bug left in a
 * leader's log, and a fuzz of contexts, vectors, HLCs and shipping envelopes (these over the
 * internal shipping endpoint). The same scenarios run on LevelDB in `http/hostile-input.test.ts`.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { HLC_ZERO, hlcFrom, hlcParts, partitionOf } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ReplicaKeys } from '../../src/storage/redis/index.js'
import { expectBadInputTable } from '../support/bad-input-table.js'
import { expectForgedContextHarmless } from '../support/forged-context.js'
import { afterWrite, call, getKey, putKey } from '../support/http-calls.js'
import {
  type HostileTarget,
  expectPoisonedEntryPasses,
  expectQuarantineContained,
  fuzzCluster,
  shippedBy0,
} from '../support/hostile-input.js'
import { failures, startRedisDeployment, type RedisDeployment } from './redis-cluster-fixture.js'

const PARTITIONS = 2
let deployment: RedisDeployment

beforeAll(async () => {
  deployment = await startRedisDeployment(PARTITIONS)
}, 30_000)
afterAll(() => deployment?.close())

/** The leader server of `key`'s partition in region 0, and the key names there. */
function leaderOf(key: string) {
  const p = partitionOf(key, PARTITIONS)
  return {
    p,
    server: deployment.grid[0]![p]![0]!,
    keys: new ReplicaKeys(deployment.config.redis.namespace, 0, p),
  }
}

const target: HostileTarget = {
  get urls() {
    return deployment.urls
  },
  partitions: PARTITIONS,
  async corrupt(key, kind, text) {
    const { server, keys } = leaderOf(key)
    if (kind === 'siblings') await server.command('SET', keys.siblings(key), text)
    else await server.command('HSET', keys.version(key), 'ts', text)
  },
  async ship(p, entries) {
    const reply = await call(`${deployment.urls[1]}/v1/internal/ship/${p}/0`, {
      method: 'POST',
      json: shippedBy0(entries),
      headers: { authorization: `Bearer ${deployment.config.auth.clusterSecret!}` },
    })
    return { status: reply.status, code: reply.body.code as string }
  },
  failures: () => failures(deployment.events),
}

/**
 * What the bug left at region 0's leader: a last log entry, covered by `sv`, whose set has a
 * counter of 2^53, and that set stored as the key's; planted with raw commands, as the Lua
 * script wrote them.
 */
async function poison(key: string): Promise<void> {
  const { server, keys } = leaderOf(key)
  const bulk = (reply: string) => reply.split('\r\n')[1] ?? ''
  const hlc = bulk(await server.command('HGET', keys.meta, 'hlc'))
  const { l, c } = hlcParts(hlc.length === 16 ? hlc : HLC_ZERO)
  const ts = hlc.length === 16 ? hlcFrom(l, c + 1) : hlcFrom(Date.now(), 0)
  const idx = Number(bulk(await server.command('HGET', keys.sv, '0')) || '0') + 1
  const siblings = `0\u001f${2 ** 53}\u001f${ts}=1`
  await server.command(
    'XADD',
    keys.log(0),
    `${idx}-0`,
    'k',
    key,
    'ts',
    ts,
    'at',
    String(Date.now()),
    's',
    siblings,
  )
  await server.command('SET', keys.siblings(key), siblings)
  await server.command('HSET', keys.meta, 'hlc', ts)
  await server.command('HSET', keys.sv, '0', String(idx))
}

describe('hostile input on the Redis deployment', () => {
  it('a forged causal context is a 400 that leaves the key readable, writable and its partition shipping', async () => {
    await expectForgedContextHarmless(deployment.urls, PARTITIONS)
    for (const url of deployment.urls) {
      const status = await call(`${url}/v1/status`)
      const shippers = status.body.shippers as { backlog: number }[]
      expect(shippers.length).toBeGreaterThan(0)
      for (const s of shippers) expect(s.backlog, JSON.stringify(s)).toBe(0)
    }
    expect(failures(deployment.events)).toEqual([])
  }, 40_000)

  it('answers every row of the bad-input table as it says, and writes nothing', async () => {
    await expectBadInputTable(target.urls)
  })

  it('answers VECTOR_UNREACHABLE at once for an index another region never wrote (issue 23.6)', async () => {
    const [r0, r1] = deployment.urls
    // Before, region 0 waited the whole timeoutMs for region 1's entry, then answered 503.
    const far = await getKey(r0, 'lww:far', '?timeoutMs=30000', {
      'causeway-after': '1:1020909456',
    })
    expect([far.status, far.body.code]).toEqual([400, 'VECTOR_UNREACHABLE'])
    expect(far.body.details).toMatchObject({ partition: expect.any(Number), region: 1 })
    // With the epoch named, and on a siblings key.
    const epoch = await getKey(r0, 'cart:far', '?timeoutMs=30000', {
      'causeway-after': '1@1:1020909456',
    })
    expect([epoch.status, epoch.body.code]).toEqual([400, 'VECTOR_UNREACHABLE'])
    // An epoch region 1 never reached (Schemathesis found it: it waited, then answered 503).
    const future = await getKey(r0, 'lww:future', '?timeoutMs=30000', {
      'causeway-after': '1:5@807207',
    })
    expect([future.status, future.body.code]).toEqual([400, 'VECTOR_UNREACHABLE'])
    // What region 1 did write is waited for and served, however fresh.
    const put = await putKey(r1, 'lww:near', 'v')
    const near = await getKey(r0, 'lww:near', '?timeoutMs=30000', {
      'causeway-after': afterWrite(put),
    })
    expect([near.status, near.body.value]).toEqual([200, 'v'])
    // What region 0 asks: an internal route, with the cluster secret only.
    const bare = await call(`${r1}/v1/internal/written/0`)
    expect(bare.status).toBe(401)
    const asked = await call(`${r1}/v1/internal/written/0`, {
      headers: { authorization: `Bearer ${deployment.config.auth.clusterSecret!}` },
    })
    expect(asked.status).toBe(200)
    expect(asked.body).toEqual({ written: expect.any(Number), epoch: 1 })
  }, 70_000)

  it('survives fuzzed contexts, vectors, HLCs and shipping envelopes, and keeps replicating', async () => {
    await fuzzCluster(target, 300, 12)
  }, 90_000)

  it('quarantines stored values that do not decode without stopping the partition, and rebuilds them', async () => {
    await expectQuarantineContained(target)
  }, 40_000)

  it('passes an entry an older version logged with a counter of 2^53 to followers and the other region', async () => {
    await expectPoisonedEntryPasses(target, poison)
  }, 40_000)
})
