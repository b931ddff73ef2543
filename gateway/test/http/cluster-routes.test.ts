import { DEFAULT_LIMITS, PROTOCOL_VERSION } from '@causeway/core'
import { afterAll, describe, expect, it } from 'vitest'
import { buildGateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

const service = new FakeClusterService({ region: 1, regions: 3, partitions: 2 })
const urls = ['http://127.0.0.1:7070', 'http://127.0.0.1:7071', 'http://127.0.0.1:7072']
const app = buildGateway({ service, regionUrls: urls, processMetrics: false })
afterAll(() => app.close())

describe('topology, status and health', () => {
  it('GET /v1/topology publishes the shape, region URLs and protocol version', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/topology' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      cluster: 'fake-cluster',
      protocol: PROTOCOL_VERSION,
      region: 1,
      regions: [
        { id: 0, name: 'r0', url: urls[0] },
        { id: 1, name: 'r1', url: urls[1] },
        { id: 2, name: 'r2', url: urls[2] },
      ],
      partitions: 2,
      replicas: 3,
      epochs: [1, 1],
      limits: { ...DEFAULT_LIMITS },
      shipping: 'fifo',
      namespaces: {},
    })
  })

  it('takes region URLs from a function when they are known only after listening', async () => {
    const late: string[] = []
    const gw = buildGateway({ service, regionUrls: () => late, processMetrics: false })
    late.push('http://x:1', 'http://x:2', 'http://x:3')
    const res = await gw.inject({ method: 'GET', url: '/v1/topology' })
    expect(res.json().regions.map((r: { url: string }) => r.url)).toEqual(late)
    await gw.close()
  })

  it('refuses a URL list that does not match the number of regions', () => {
    expect(() => buildGateway({ service, regionUrls: ['http://only-one'] })).toThrow(/3 regions/)
  })

  it('GET /v1/status lists every replica with role, sv and lag, and every shipping link', async () => {
    await app.inject({ method: 'PUT', url: '/v1/kv/k', payload: { value: 1 } })
    const res = await app.inject({ method: 'GET', url: '/v1/status' })
    expect(res.statusCode).toBe(200)
    const status = res.json()
    expect(status).toMatchObject({ cluster: 'fake-cluster', region: 1 })
    expect(status.replicas).toHaveLength(6)
    expect(status.replicas[0]).toEqual({
      region: 1,
      partition: 0,
      replica: 0,
      role: 'leader',
      backend: 'fake',
      epoch: 1,
      sv: expect.any(Array),
      lag: { entries: 0, ms: 0 },
    })
    expect(status.shippers).toHaveLength(4)
    expect(status.shippers[0]).toEqual({
      partition: 0,
      from: 1,
      to: 0,
      shipped: 0,
      backlog: expect.any(Number),
      lagMs: expect.any(Number),
    })
  })

  it('GET /healthz answers ok with the region', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok', region: 1 })
  })

  it('an error in status() is INTERNAL, not a crash', async () => {
    const broken = new FakeClusterService()
    broken.status = async () => {
      throw new Error('status broke')
    }
    const gw = buildGateway({ service: broken, regionUrls: ['a', 'b'], processMetrics: false })
    const res = await gw.inject({ method: 'GET', url: '/v1/status' })
    expect(res.statusCode).toBe(500)
    expect(res.json().code).toBe('INTERNAL')
    await gw.close()
  })
})
