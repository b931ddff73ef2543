/** Gateways listening for a whole cluster: URLs, topology across regions, graceful close. */
import type { ReadRequest, ReadResult } from '../../src/cluster/cluster-service.js'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { serveCluster, type ServableCluster, type ServedCluster } from '../../src/dev-server.js'
import { FakeClusterService } from './fake-cluster-service.js'

class FakeCluster implements ServableCluster {
  readonly services = [0, 1].map((region) => new FakeClusterService({ region, regions: 2 }))
  closedAt: number | undefined
  service(region: number): FakeClusterService {
    return this.services[region]!
  }
  async close(): Promise<void> {
    this.closedAt = performance.now()
  }
}

let served: ServedCluster<FakeCluster> | undefined
afterEach(async () => {
  await served?.close()
  served = undefined
})

describe('serveCluster', () => {
  it('listens once per region on 127.0.0.1 and publishes every URL in each topology', async () => {
    served = await serveCluster(new FakeCluster(), { regions: 2, port: 0 })
    expect(served.urls).toHaveLength(2)
    for (const url of served.urls) expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    for (const [region, url] of served.urls.entries()) {
      const topology = await (await fetch(`${url}/v1/topology`)).json()
      expect(topology.region).toBe(region)
      expect(topology.regions.map((r: { url: string }) => r.url)).toEqual(served.urls)
    }
    const put = await fetch(`${served.urls[1]}/v1/kv/k`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'x' }),
    })
    expect(await put.json()).toMatchObject({ dc: 1, region: 1 })
  })

  it('publishes the public URLs it is given, and lets pages of any origin call by default', async () => {
    const publicUrls = ['https://dev.example.com/eu', 'https://dev.example.com/us']
    served = await serveCluster(new FakeCluster(), { regions: 2, port: 0, publicUrls })
    const res = await fetch(`${served.urls[0]}/v1/topology`, {
      headers: { origin: 'http://localhost:5173' },
    })
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const topology = await res.json()
    expect(topology.regions.map((r: { url: string }) => r.url)).toEqual(publicUrls)
  })

  it('refuses a count of public URLs other than the number of regions, and closes the cluster', async () => {
    const cluster = new FakeCluster()
    await expect(
      serveCluster(cluster, { regions: 2, port: 0, publicUrls: ['https://one.example'] }),
    ).rejects.toThrow(/publicUrls has 1 URLs; the cluster has 2 regions/)
    expect(cluster.closedAt).toBeDefined()
  })

  it('closes gracefully: the read in flight completes, new requests are refused, then the cluster closes', async () => {
    const cluster = new FakeCluster()
    const service = cluster.services[0]!
    let release: (() => void) | undefined
    let entered: (() => void) | undefined
    const inService = new Promise<void>((resolve) => (entered = resolve))
    const read = service.read.bind(service)
    service.read = async (request: ReadRequest): Promise<ReadResult> => {
      entered!()
      await new Promise<void>((resolve) => (release = resolve))
      return read(request)
    }
    served = await serveCluster(cluster, { regions: 2, port: 0 })
    const url = served.urls[0]!
    const inFlight = fetch(`${url}/v1/kv/k`)
    await inService
    let closedAt: number | undefined
    const closing = served.close().then(() => (closedAt = performance.now()))
    // Until close() reached the point where the listener stops accepting.
    await vi.waitFor(() => expect(served!.gateways[0]!.server.listening).toBe(false))
    const refused = await fetch(`${url}/healthz`).then(
      (res) => res.status,
      () => 'refused',
    )
    expect([503, 'refused']).toContain(refused)
    expect(cluster.closedAt).toBeUndefined()
    const releasedAt = performance.now()
    release!()
    const res = await inFlight
    expect(res.status).toBe(200)
    expect((await res.json()).found).toBe(false)
    await closing
    expect(cluster.closedAt).toBeGreaterThanOrEqual(releasedAt)
    expect(closedAt).toBeGreaterThanOrEqual(cluster.closedAt!)
    served = undefined
  })

  it('closes what it started when a region cannot listen', async () => {
    const first = await serveCluster(new FakeCluster(), { regions: 2, port: 0 })
    const taken = Number(new URL(first.urls[1]!).port)
    const cluster = new FakeCluster()
    await expect(serveCluster(cluster, { regions: 2, port: taken - 1 })).rejects.toThrow(
      /EADDRINUSE/,
    )
    expect(cluster.closedAt).toBeDefined()
    await first.close()
  })
})

describe('serveCluster drain timeout', () => {
  it('cuts connections whose requests do not finish within drainTimeoutMs, then closes the cluster', async () => {
    const cluster = new FakeCluster()
    const service = cluster.services[0]!
    let entered: (() => void) | undefined
    const inService = new Promise<void>((resolve) => (entered = resolve))
    service.read = () => {
      entered!()
      return new Promise<ReadResult>(() => undefined) // never answers
    }
    served = await serveCluster(cluster, { regions: 2, port: 0, drainTimeoutMs: 200 })
    const inFlight = fetch(`${served.urls[0]}/v1/kv/k`).then(
      () => 'answered',
      () => 'cut',
    )
    await inService
    const started = performance.now()
    await served.close()
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(await inFlight).toBe('cut')
    expect(cluster.closedAt).toBeDefined()
    served = undefined
  })
})
