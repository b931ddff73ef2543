/**
 * Sets on the Redis replica: the set compliance suite, and what is Redis's own: several gateway
 * processes (replica objects) writing one set at once, each plan compare-and-set on the set's
 * write counter, and followers (REPLICAOF) serving the sets their leader's scripts wrote.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { HLC_ZERO } from '@causeway/core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { RedisPartitionReplica } from '../../../src/storage/redis/index.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { elementsOf, entriesOf, setCompliance, setsOf } from '../set-compliance.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis({ appendfsync: 'everysec' })
})
afterAll(stopAllRedis)

setCompliance('redis', async (shape) => {
  const namespace = `sets-${randomUUID()}`
  return {
    replica: (options) =>
      new RedisPartitionReplica({ ...shape, ...options, url: server.url, namespace }),
    destroy: async () => {},
  }
})

describe('Redis sets', () => {
  const opened: RedisPartitionReplica[] = []
  afterEach(async () => {
    for (const r of opened.splice(0)) await r.close()
  })

  async function open(url: string, namespace: string, replica = 0) {
    const r = new RedisPartitionReplica({
      url,
      namespace,
      region: 0,
      partition: 0,
      replica,
      regions: 2,
    })
    opened.push(r)
    await r.open()
    return r
  }

  it('several writers of one leader never lose a write or mint a dot twice', async () => {
    const namespace = `cas-${randomUUID()}`
    const writers = await Promise.all([0, 1, 2].map(() => open(server.url, namespace)))
    const entries = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        setsOf(writers[i % 3]!).write(
          's',
          { op: 'add', elements: [{ element: `e${i}` }] },
          HLC_ZERO,
        ),
      ),
    )
    expect(entries.map((e) => e.idx).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 60 }, (_, i) => i + 1),
    )
    const entriesRead = await entriesOf(writers[0]!, 's')
    expect(entriesRead).toHaveLength(60)
    const dots = entriesRead.flatMap((e) => e.dots.map((d) => `${d.actor}.${d.counter}`))
    expect(new Set(dots).size).toBe(60)
    expect((await setsOf(writers[1]!).size('s')).size).toBe(60)
  })

  it('a follower serves what the leader wrote, with the same stamp', async () => {
    const follower = await startRedis({ appendfsync: 'everysec' })
    try {
      await follower.replicaOf(server)
      const namespace = `follow-${randomUUID()}`
      const leader = await open(server.url, namespace)
      const replica = await open(follower.url, namespace, 1)
      const e = await setsOf(leader).write(
        's',
        { op: 'add', elements: [{ element: 'a' }, { element: 'b' }] },
        HLC_ZERO,
      )
      await setsOf(leader).write('s', { op: 'remove', elements: [{ element: 'a' }] }, HLC_ZERO)
      expect(await replica.waitFor([2, 0], Date.now() + 5000)).toBe(true)
      expect(await elementsOf(replica, 's')).toEqual(['b'])
      expect(await setsOf(replica).has('s', 'b')).toEqual({
        dots: [{ actor: 0, counter: 2 }],
        stamp: { seen: [2, 0], ts: (await setsOf(leader).has('s', 'b')).stamp.ts },
      })
      expect(e.idx).toBe(1)
      await expect(
        setsOf(replica).write('s', { op: 'add', elements: [{ element: 'c' }] }, HLC_ZERO),
      ).rejects.toMatchObject({ code: expect.stringMatching(/INTERNAL|BACKEND_UNAVAILABLE/) })
    } finally {
      await follower.destroy()
    }
  })
})
