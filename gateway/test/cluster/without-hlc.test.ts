import { hlcFrom, hlcMillis } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { writeRequest } from '../support/write-request.js'

// The benchmark ablation "without HLC" (NuKV section 6): a write ignores its dt and waits for its
// dependency vector at the leader instead.
describe('EmbeddedCluster withoutHlc (benchmark ablation)', () => {
  const clusters: EmbeddedCluster[] = []
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.close()))
  })

  async function start(withoutHlc: boolean): Promise<EmbeddedCluster> {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 1,
      replicas: 1,
      wanDelayMs: 300,
      withoutHlc,
    })
    clusters.push(cluster)
    return cluster
  }

  it('makes a write wait until the leader has applied its dependencies, then orders it after them', async () => {
    const cluster = await start(true)
    const first = await cluster.service(0).write(writeRequest('k'))
    const started = Date.now()
    const second = await cluster
      .service(1)
      .write(writeRequest('k', { need: { epoch: first.epoch, need: [first.idx, 0] } }))
    // It could not be accepted before region 0's write was shipped (one-way WAN delay).
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
    expect(second.ts > first.ts).toBe(true)
    expect(cluster.replica(1, 0, 0).sv()[0]).toBeGreaterThanOrEqual(first.idx)
  })

  it('stamps from the leader clock only: a dt ahead of it does not push the stamp', async () => {
    const cluster = await start(true)
    const dt = hlcFrom(Date.now() + 10_000, 0)
    const w = await cluster.service(0).write(writeRequest('k', { dt }))
    expect(hlcMillis(w.ts)).toBeLessThan(hlcMillis(dt))
  })

  it('is off by default: the same write with HLC does not wait for shipping', async () => {
    const cluster = await start(false)
    const first = await cluster.service(0).write(writeRequest('k'))
    const started = Date.now()
    const second = await cluster
      .service(1)
      .write(
        writeRequest('k', { dt: first.ts, need: { epoch: first.epoch, need: [first.idx, 0] } }),
      )
    expect(Date.now() - started).toBeLessThan(250)
    // The HLC orders it after what it depends on without waiting.
    expect(second.ts > first.ts).toBe(true)
  })
})
