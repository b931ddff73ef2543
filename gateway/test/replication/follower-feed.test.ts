import { HLC_ZERO, hlcFrom } from '@causeway/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FollowerFeed } from '../../src/replication/follower-feed.js'
import { Replicas, reach, writeMany } from './support.js'
import { entry, ship } from '../support/log-entries.js'

describe('FollowerFeed', () => {
  const replicas = new Replicas()
  const feeds: FollowerFeed[] = []
  afterEach(async () => {
    await Promise.all(feeds.splice(0).map((f) => f.stop()))
    await replicas.closeAll()
  })

  async function pair(lagMs = 0, batchSize?: number) {
    const leader = await replicas.open(0, 2, 0)
    const follower = await replicas.open(0, 2, 1)
    const feed = new FollowerFeed({ leader, follower, lagMs, ...(batchSize ? { batchSize } : {}) })
    feeds.push(feed)
    return { leader, follower, feed }
  }

  it('delays visibility at the follower by the lag, not at the leader', async () => {
    const { leader, follower, feed } = await pair(80)
    feed.start()
    const written = Date.now()
    const e = await leader.write('k', '"v"', HLC_ZERO)
    expect((await leader.read('k')).version?.value).toBe('"v"')
    expect((await follower.read('k')).version).toBeUndefined()
    await reach(follower, 0, e.idx)
    expect(Date.now() - written).toBeGreaterThanOrEqual(75)
    expect((await follower.read('k')).version).toEqual({ value: '"v"', ts: e.ts, dc: 0 })
  })

  it('applies at once without lag', async () => {
    const { leader, follower, feed } = await pair(0)
    feed.start()
    const started = Date.now()
    const e = await leader.write('k', '1', HLC_ZERO)
    await reach(follower, 0, e.idx)
    expect(Date.now() - started).toBeLessThan(250)
  })

  it('applies every origin in order, so the follower ends equal to its leader', async () => {
    const { leader, follower, feed } = await pair(5, 3)
    feed.start()
    const t = Date.now()
    const shipped = Array.from({ length: 10 }, (_, i) =>
      entry(1, i + 1, `k${i % 4}`, `"r${i}"`, hlcFrom(t + i, 0), t),
    )
    await Promise.all([
      writeMany(leader, 10, 'k'),
      leader.receive(ship(1, shipped.slice(0, 6))),
      leader.receive(ship(1, shipped)),
    ])
    expect(leader.sv()).toEqual([10, 10])
    await reach(follower, 0, 10)
    await reach(follower, 1, 10)
    expect(await follower.readLog(0, 0, 100)).toEqual(await leader.readLog(0, 0, 100))
    expect(await follower.readLog(1, 0, 100)).toEqual(await leader.readLog(1, 0, 100))
    for (const key of ['k0', 'k1', 'k2', 'k3', 'k9']) {
      expect((await follower.read(key)).version).toEqual((await leader.read(key)).version)
    }
  })

  it('catches up from its own sv when it starts', async () => {
    const { leader, follower, feed } = await pair(0, 7)
    const log = await writeMany(leader, 50)
    await follower.apply(log.slice(0, 12))
    feed.start()
    await reach(follower, 0, 50)
    expect(await follower.readLog(0, 0, 100)).toEqual(log)
  })

  it('reports how far behind it is, in entries and age', async () => {
    const { leader, follower, feed } = await pair(100)
    feed.start()
    expect(feed.lag()).toEqual({ entries: 0, ms: 0 })
    await writeMany(leader, 3)
    // Its age grows while the entries are on their way (100 ms).
    await vi.waitFor(() => expect(feed.lag().ms).toBeGreaterThanOrEqual(25))
    const behind = feed.lag()
    expect(behind.entries).toBe(3)
    await reach(follower, 0, 3)
    expect(feed.lag()).toEqual({ entries: 0, ms: 0 })
  })

  it('stops applying once stopped', async () => {
    const { leader, follower, feed } = await pair(30)
    feed.start()
    await leader.write('k', '1', HLC_ZERO)
    await feed.stop()
    expect(await follower.waitFor([1, 0], Date.now() + 80)).toBe(false)
    expect(follower.sv()).toEqual([0, 0])
  })
})
