import { HLC_ZERO } from '@causeway/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { InProcessLink } from '../../src/replication/in-process-link.js'
import { Shipper, type ShipperOptions } from '../../src/replication/shipper.js'
import type { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import { FlakyLink, Replicas, reach, sleep, writeMany } from './support.js'
import { ship as envelope } from '../support/log-entries.js'

describe('Shipper', () => {
  const replicas = new Replicas()
  const shippers: Shipper[] = []
  afterEach(async () => {
    await Promise.all(shippers.splice(0).map((s) => s.stop()))
    await replicas.closeAll()
  })

  function ship(
    source: LevelPartitionReplica,
    destination: LevelPartitionReplica,
    delayMs: number,
    options: Partial<ShipperOptions> = {},
  ) {
    const link = new FlakyLink(new InProcessLink({ origin: source.region, destination, delayMs }))
    const shipper = new Shipper({ source, to: destination.region, link, ...options })
    shippers.push(shipper)
    return { link, shipper }
  }

  it('delivers every local write to every other region in order, exactly once, under WAN delay', async () => {
    const leaders = [
      await replicas.open(0, 3),
      await replicas.open(1, 3),
      await replicas.open(2, 3),
    ]
    const links: FlakyLink[] = []
    for (const from of leaders) {
      for (const to of leaders) {
        if (from === to) continue
        const { link, shipper } = ship(from, to, 20, { batchSize: 5 })
        links.push(link)
        shipper.start()
      }
    }
    // Writes keep coming while shipping runs, in several waves.
    const written = leaders.map(() => [] as Awaited<ReturnType<typeof writeMany>>)
    for (let wave = 0; wave < 4; wave++) {
      const waves = await Promise.all(leaders.map((l) => writeMany(l, 12, `w${wave}-`)))
      waves.forEach((entries, d) => written[d]!.push(...entries))
      await sleep(7)
    }
    for (const to of leaders) {
      for (const from of leaders) if (from !== to) await reach(to, from.region, 48)
    }
    for (const to of leaders) {
      for (const from of leaders) {
        if (from === to) continue
        // The destination's stream of each origin is the origin's own log: same entries, same order.
        expect(await to.readLog(from.region, 0, 1000)).toEqual(written[from.region])
      }
      expect(to.sv()).toEqual([48, 48, 48])
    }
    // The last acknowledgements are one delay behind the entries.
    for (const s of shippers) await vi.waitFor(() => expect(s.backlog()).toBe(0))
    // Nothing was sent twice, and batches left in idx order.
    for (const link of links)
      expect(link.sent.flat()).toEqual(Array.from({ length: 48 }, (_, i) => i + 1))
    for (const s of shippers)
      expect(await s.status()).toMatchObject({ shipped: 48, backlog: 0, lagMs: 0 })
  })

  it('pipelines batches instead of waiting a round trip for each', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    await writeMany(source, 12)
    const { link, shipper } = ship(source, destination, 40, { batchSize: 1, maxInFlight: 16 })
    const started = Date.now()
    shipper.start()
    await reach(destination, 0, 12)
    // Checkpoint round trip (80 ms) plus one way (40 ms); one round trip per batch would be ~1 s.
    expect(Date.now() - started).toBeLessThan(600)
    expect(link.sent).toHaveLength(12)
  })

  it('starts from the destination checkpoint', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const log = await writeMany(source, 10)
    await destination.receive(envelope(0, log.slice(0, 6)))
    const { link, shipper } = ship(source, destination, 5)
    shipper.start()
    await reach(destination, 0, 10)
    expect(link.sent.flat()).toEqual([7, 8, 9, 10])
    expect(await destination.readLog(0, 0, 100)).toEqual(log)
  })

  it('retries with backoff when the link fails, and converges', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const errors: unknown[] = []
    const { link, shipper } = ship(source, destination, 10, {
      batchSize: 3,
      retryMinMs: 5,
      retryMaxMs: 40,
      onError: (e) => errors.push(e),
    })
    // Every third send is lost while later, pipelined ones get through: the destination sees gaps.
    link.failWhen = (n) => n % 3 === 0 && n < 20
    shipper.start()
    const log: Awaited<ReturnType<typeof writeMany>> = []
    for (let i = 0; i < 5; i++) {
      log.push(...(await writeMany(source, 8, `b${i}-`)))
      await sleep(5)
    }
    await reach(destination, 0, 40)
    expect(link.failures).toBeGreaterThan(0)
    expect(errors.length).toBeGreaterThanOrEqual(link.failures)
    expect(await destination.readLog(0, 0, 100)).toEqual(log)
    await vi.waitFor(() => expect(shipper.backlog()).toBe(0))
    expect(await shipper.status()).toEqual({
      partition: 0,
      from: 0,
      to: 1,
      shipped: 40,
      backlog: 0,
      lagMs: 0,
    })
  })

  it('keeps retrying while the link is down and resumes when it is back', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const { link, shipper } = ship(source, destination, 5, { retryMinMs: 5, retryMaxMs: 20 })
    let down = true
    link.failWhen = () => down
    shipper.start()
    await writeMany(source, 5)
    const written = Date.now()
    await vi.waitFor(() => expect(link.failures).toBeGreaterThanOrEqual(2))
    expect(destination.sv()).toEqual([0, 0])
    expect(shipper.backlog()).toBe(5)
    // The oldest write not acknowledged has waited since it was written.
    const waited = Date.now() - written
    expect((await shipper.status()).lagMs).toBeGreaterThanOrEqual(waited)
    // Backoff is capped, so the shipper notices the link is back within about retryMaxMs.
    down = false
    await reach(destination, 0, 5, 1000)
    await vi.waitFor(() => expect(shipper.backlog()).toBe(0))
    expect((await shipper.status()).lagMs).toBe(0)
  })

  it('reports its backlog as local writes not yet acknowledged', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const { shipper } = ship(source, destination, 50)
    shipper.start()
    await writeMany(source, 4)
    expect(shipper.backlog()).toBe(4)
    expect(shipper.shipped()).toBe(0)
    await reach(destination, 0, 4)
    // The destination has applied them; the acknowledgement is still on its way back.
    expect(shipper.backlog()).toBe(4)
    await vi.waitFor(() => expect(shipper.backlog()).toBe(0))
    expect(shipper.shipped()).toBe(4)
  })

  it('ships nothing more once stopped', async () => {
    const source = await replicas.open(0, 2)
    const destination = await replicas.open(1, 2)
    const { link, shipper } = ship(source, destination, 5)
    shipper.start()
    await source.write('a', '1', HLC_ZERO)
    await reach(destination, 0, 1)
    await shipper.stop()
    await source.write('b', '1', HLC_ZERO)
    expect(await destination.waitFor([2, 0], Date.now() + 50)).toBe(false)
    expect(link.sent.flat()).toEqual([1])
  })
})
