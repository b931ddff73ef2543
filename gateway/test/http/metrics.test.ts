import { afterAll, describe, expect, it } from 'vitest'
import { buildGateway } from '../../src/http/build-gateway.js'
import { sample } from './exposition.js'
import { FakeClusterService } from './fake-cluster-service.js'

const service = new FakeClusterService({ region: 1 })
const app = buildGateway({ service, regionUrls: ['a', 'b'], processMetrics: false })
const other = buildGateway({
  service: new FakeClusterService({ region: 0 }),
  regionUrls: ['a', 'b'],
})
afterAll(async () => {
  await app.close()
  await other.close()
})

async function scrape(gw = app): Promise<string> {
  const res = await gw.inject({ method: 'GET', url: '/metrics' })
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^text\/plain/)
  return res.body
}

describe('GET /metrics', () => {
  it('exposes latency by operation, level and status, read wait and the after-header size', async () => {
    await app.inject({ method: 'PUT', url: '/v1/kv/k?level=eventual', payload: { value: 1 } })
    await app.inject({ method: 'GET', url: '/v1/kv/k', headers: { 'causeway-after': '1@1:1' } })
    await app.inject({ method: 'GET', url: '/v1/kv/k?level=bogus' })
    const text = await scrape()
    const requests = 'causeway_http_request_duration_seconds_count'
    expect(
      sample(text, requests, { region: '1', operation: 'put', level: 'eventual', status: '200' }),
    ).toBe(1)
    expect(
      sample(text, requests, { region: '1', operation: 'get', level: 'session', status: '200' }),
    ).toBe(1)
    // An invalid level never becomes a label value of its own.
    expect(
      sample(text, requests, { region: '1', operation: 'get', level: 'invalid', status: '400' }),
    ).toBe(1)
    expect(
      sample(text, 'causeway_read_wait_seconds_count', { region: '1', level: 'session' }),
    ).toBe(1)
    expect(
      sample(text, 'causeway_read_after_header_bytes_sum', { region: '1', level: 'session' }),
    ).toBe(5)
  })

  it('exposes replication lag per partition and replica and shipper backlog per destination', async () => {
    const text = await scrape()
    const follower = { region: '1', partition: '0', replica: '2', role: 'follower' }
    expect(sample(text, 'causeway_replica_lag_entries', follower)).toBe(2)
    expect(
      sample(text, 'causeway_replica_lag_seconds', { ...follower, partition: '3', replica: '1' }),
    ).toBe(0.01)
    expect(
      sample(text, 'causeway_replica_lag_entries', {
        partition: '0',
        replica: '0',
        role: 'leader',
      }),
    ).toBe(0)
    expect(
      sample(text, 'causeway_shipper_backlog_entries', { region: '1', to: '0' }),
    ).toBeGreaterThanOrEqual(0)
  })

  it('keeps each gateway in its own registry, with process metrics when asked', async () => {
    const text = await scrape(other)
    expect(text).not.toContain('region="1"')
    expect(text).toContain('process_cpu_user_seconds_total')
    expect(await scrape()).not.toContain('process_cpu_user_seconds_total')
  })
})
