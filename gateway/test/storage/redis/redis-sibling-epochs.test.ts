/**
 * Issue 22, item 3: a sibling dot a failover lost is never minted again for another value. On
 * real redis-servers: region 0's leader writes a siblings key four times, its follower stops
 * replicating (the cut), the leader writes a fifth time and ships all five to region 1, then the
 * follower takes over as a new leader process (epoch 2) without the fifth. A client in region 1
 * that read the fifth writes with that context; the new leader of region 0 writes another value.
 * When the two meet, in both regions, the new value must be there: before dots were minted under
 * an actor per epoch, the new leader minted dot (0, 5) again, and the merge dropped it everywhere.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import type { CausewayError } from '@causeway/core'
import { HLC_ZERO, MAX_SAFE_COUNTER, shipEnvelope } from '@causeway/core'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { RedisServerAdmin } from '../../../src/storage/redis/server-admin.js'
import { ReplicaKeys } from '../../../src/storage/redis/index.js'
import type { RedisPartitionReplica } from '../../../src/storage/redis/index.js'
import { contextOf, listSiblings } from '../../../src/storage/sibling-set.js'
import { replicasClosedAfterEach } from '../../support/redis-replicas.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'

let leader: RedisServer
let follower: RedisServer
let remote: RedisServer
beforeAll(async () => {
  ;[leader, follower, remote] = await Promise.all([startRedis(), startRedis(), startRedis()])
})
afterAll(stopAllRedis)

const replicaOn = replicasClosedAfterEach('sibling-epochs')

/** The server's run id, once its admin connection is up. */
async function runIdOf(target: RedisServer): Promise<string> {
  const admin = new RedisServerAdmin(target.url)
  try {
    let runId: string | undefined
    await vi.waitUntil(
      async () =>
        (runId = await admin.info().then(
          (i) => i.runId,
          () => undefined,
        )),
      { timeout: 10_000, interval: 20 },
    )
    return runId!
  } finally {
    admin.close()
  }
}

async function valuesOf(replica: RedisPartitionReplica, key: string): Promise<unknown[]> {
  const { siblings } = await replica.readSiblings(key)
  return listSiblings(siblings).map((s) =>
    s.value === undefined ? undefined : JSON.parse(s.value),
  )
}

/** Ships every entry of region `from`'s log in `source` above `after` to `target`. */
async function ship(
  source: RedisPartitionReplica,
  from: number,
  after: number,
  target: RedisPartitionReplica,
): Promise<void> {
  const entries = await source.readLog(from, after, 1000)
  await target.receive(shipEnvelope(from, source.epochHistory(from), entries))
}

describe('sibling dots after a failover that lost one', () => {
  it('the new leader never mints a lost dot again: no value lost when a context that saw it meets the new write', async () => {
    const namespace = `sibling-epochs-${randomUUID()}`
    const key = 'cart:lost-dot'
    // Region 0: the old leader, supervised, under its server process's claim (epoch 1).
    const old = replicaOn(leader, { namespace, region: 0, supervised: true })
    await old.open()
    const oldRun = await runIdOf(leader)
    await old.claim(oldRun, 'old', 0, 1)
    old.lead(oldRun)
    let context = (await old.readSiblings(key)).siblings
    for (let i = 1; i <= 4; i++) {
      await old.writeSibling(key, JSON.stringify(`v${i}`), HLC_ZERO, contextOf(context))
      context = (await old.readSiblings(key)).siblings
    }
    // Its follower has the four writes, then stops replicating: the cut.
    await follower.replicaOf(leader)
    const setKey = new ReplicaKeys(namespace, 0, 0).siblings(key)
    await vi.waitUntil(
      async () => (await follower.command('GET', setKey)) === (await leader.command('GET', setKey)),
      { timeout: 10_000, interval: 20 },
    )
    await follower.command('REPLICAOF', 'NO', 'ONE')
    // The fifth write reaches only the old leader and region 1, which ships all five.
    await old.writeSibling(key, JSON.stringify('lost'), HLC_ZERO, contextOf(context))
    const there = replicaOn(remote, { namespace: `${namespace}-r1`, region: 1 })
    await there.open()
    await ship(old, 0, 0, there)
    expect(await valuesOf(there, key)).toEqual(['lost'])

    // The follower leads as a new process: epoch 2, without the fifth write.
    const next = replicaOn(follower, { namespace, region: 0, supervised: true })
    await next.open()
    const nextRun = await runIdOf(follower)
    await next.claim(nextRun, 'next', 0, 1)
    next.lead(nextRun)
    expect(next.epoch()).toBe(2)
    expect(await valuesOf(next, key)).toEqual(['v4'])

    // A client in region 1 read the lost write and writes with that context; the new leader of
    // region 0 writes another value, blind.
    const read = await there.readSiblings(key)
    await there.writeSibling(key, JSON.stringify('from r1'), HLC_ZERO, contextOf(read.siblings))
    const fresh = await next.writeSibling(key, JSON.stringify('new'), HLC_ZERO, [])

    // They meet, both ways.
    await ship(next, 0, fresh.idx - 1, there)
    await ship(there, 1, 0, next)
    for (const replica of [next, there]) {
      const values = await valuesOf(replica, key)
      expect(values).toContain('new')
      expect(values).toContain('from r1')
      // What the client saw (the lost write, and v4 before it) it superseded.
      expect(values).not.toContain('lost')
      expect(values).not.toContain('v4')
    }
  })

  it('a key stuck at COUNTER_EXHAUSTED (left by a forged context before contexts were bounded) takes writes again under a new leader process', async () => {
    const namespace = `sibling-epochs-${randomUUID()}`
    const key = 'cart:exhausted'
    const keys = new ReplicaKeys(namespace, 0, 0)
    const own = await startRedis()
    const first = replicaOn(own, { namespace, region: 0, supervised: true })
    await first.open()
    const run = await runIdOf(own)
    await first.claim(run, 'here', 0, 1)
    first.lead(run)
    expect(first.epoch()).toBe(1)
    // What the bug left: region 0's actor of epoch 1 at the counter bound for this key.
    await own.command('SET', keys.siblings(key), `0\u001f${MAX_SAFE_COUNTER}`)
    const stuck = await first.writeSibling(key, '1', HLC_ZERO, []).catch((e: unknown) => e)
    expect((stuck as CausewayError).code).toBe('COUNTER_EXHAUSTED')
    await first.close()
    // The operator's remedy (docs/siblings.md): a leader handover (SENTINEL FAILOVER, or the
    // leader's process restarted under Sentinel): a claim by another server process starts
    // epoch 2, whose actor has never written the key.
    await own.stop()
    const again = await startRedis({ dir: own.dir, port: own.port })
    const next = replicaOn(again, { namespace, region: 0, supervised: true })
    await next.open()
    const nextRun = await runIdOf(again)
    await next.claim(nextRun, 'here', 0, 1)
    next.lead(nextRun)
    expect(next.epoch()).toBe(2)
    await next.writeSibling(key, '2', HLC_ZERO, [])
    expect(await valuesOf(next, key)).toEqual([2])
  })
})
