import { hlcFrom, hlcMillis } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import { withoutHlc } from '../../src/ablation/without-hlc.js'
import type { ClusterService } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { writeRequest } from '../support/write-request.js'

// The benchmark ablation "without HLC" (NuKV section 6): a write ignores its dt and waits for its
// dependency vector at the leader instead. A wrapper around a region's service, outside the
// cluster and storage layers.
describe('withoutHlc (benchmark ablation)', () => {
  const clusters: EmbeddedCluster[] = []
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.close()))
  })

  async function start(): Promise<EmbeddedCluster> {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 1,
      replicas: 1,
      wanDelayMs: 300,
    })
    clusters.push(cluster)
    return cluster
  }

  const ablated = (cluster: EmbeddedCluster, d: number): ClusterService =>
    withoutHlc(cluster.service(d))

  it('makes a write wait until the leader has applied its dependencies, then orders it after them', async () => {
    const cluster = await start()
    const first = await ablated(cluster, 0).write(writeRequest('k'))
    const started = Date.now()
    const second = await ablated(cluster, 1).write(
      writeRequest('k', { need: { epoch: first.epoch, need: [first.idx, 0] } }),
    )
    // It could not be accepted before region 0's write was shipped (one-way WAN delay).
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
    expect(second.waitedMs).toBeGreaterThanOrEqual(200)
    expect(second.ts > first.ts).toBe(true)
    expect(cluster.replica(1, 0, 0).sv()[0]).toBeGreaterThanOrEqual(first.idx)
  })

  it('stamps from the leader clock only: a dt ahead of it does not push the stamp', async () => {
    const cluster = await start()
    const dt = hlcFrom(Date.now() + 10_000, 0)
    const w = await ablated(cluster, 0).write(writeRequest('k', { dt }))
    expect(hlcMillis(w.ts)).toBeLessThan(hlcMillis(dt))
    expect(w.waitedMs).toBe(0)
  })

  it('leaves reads, sets and status to the service it wraps', async () => {
    const cluster = await start()
    const service = ablated(cluster, 0)
    expect(service.region).toBe(0)
    expect(service.sets).toBe(cluster.service(0).sets)
    expect(service.changes).toBe(cluster.service(0).changes)
    expect(service.shape()).toEqual(cluster.service(0).shape())
  })

  it('is off without the wrapper: the same write with HLC does not wait for shipping', async () => {
    const cluster = await start()
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
