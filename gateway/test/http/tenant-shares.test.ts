/**
 * Shares per tenant (issue 23, item 4): watcher slots, connections and body bytes in flight each
 * have a gateway-wide cap and a share per API key (per client address without one), so one
 * tenant cannot lock the others out; refused requests (401, 403) count toward a rate limit per
 * address. Each test is a reproduction from the issue, over real sockets against a gateway on an
 * embedded cluster (or a fake service where no data is needed).
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { buildGateway, type Gateway, type GatewayOptions } from '../../src/http/build-gateway.js'
import { openSse, type SseStream } from '../support/sse-client.js'
import { FakeClusterService } from './fake-cluster-service.js'

const KEY_A = 'tenant-a-key-0123456789'
const KEY_B = 'tenant-b-key-0123456789'
const KEY_C = 'tenant-c-key-0123456789'
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A listening gateway over `service` (a fake one by default). */
async function listen(
  options: Partial<GatewayOptions>,
  service: GatewayOptions['service'] = new FakeClusterService(),
): Promise<{ app: Gateway; url: string; port: number }> {
  const regionUrls = service.shape().regionNames.map((_, d) => `http://region${d}`)
  const app = buildGateway({ service, regionUrls, processMetrics: false, ...options })
  await app.listen({ host: '127.0.0.1', port: 0 })
  cleanups.push(() => app.close())
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return { app, url: `http://127.0.0.1:${address.port}`, port: address.port }
}

/** A raw connection from `localAddress`, with everything it receives and when it closed. */
interface Raw {
  socket: Socket
  data(): string
  closed: Promise<void>
  isClosed(): boolean
}

function rawConnection(port: number, localAddress = '127.0.0.1'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress })
    cleanups.push(() => socket.destroy())
    let data = ''
    let isClosed = false
    socket.setEncoding('utf8').on('data', (chunk: string) => (data += chunk))
    socket.on('error', () => undefined)
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        isClosed = true
        done()
      }),
    )
    socket.once('connect', () =>
      resolve({ socket, data: () => data, closed, isClosed: () => isClosed }),
    )
    socket.once('error', reject)
  })
}

/** The status and JSON body of a raw reply once it has arrived whole (polls with a deadline). */
async function replyOf(c: Raw): Promise<{ status: number; body: Record<string, unknown> }> {
  return vi.waitFor(
    () => {
      const data = c.data()
      const head = data.indexOf('\r\n\r\n')
      const length = Number(/content-length: (\d+)/i.exec(data)?.[1])
      if (head < 0 || !(data.length >= head + 4 + length)) throw new Error('no whole reply yet')
      return {
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]),
        body: JSON.parse(data.slice(head + 4, head + 4 + length)) as Record<string, unknown>,
      }
    },
    { timeout: 10_000, interval: 20 },
  )
}

/** Sends the head of a `POST /v1/ops` declaring a body of `length` bytes, and none of the body. */
function sendOpsHead(c: Raw, key: string, length: number): void {
  c.socket.write(
    `POST /v1/ops HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n` +
      `content-type: application/json\r\ncontent-length: ${length}\r\n\r\n`,
  )
}

describe('watcher slots: a global cap and a share per key', () => {
  it('leaves tenant B its share when tenant A asks for every slot (A is refused past its own)', async () => {
    const cluster = await EmbeddedCluster.start({ regions: 1, partitions: 2, replicas: 1 })
    cleanups.push(() => cluster.close())
    // A share of a tenth of the cap by default: 2 of 20.
    const { url } = await listen(
      { auth: { apiKeys: [KEY_A, KEY_B] }, watch: { maxWatchers: 20 } },
      cluster.service(0),
    )
    const held: SseStream[] = []
    cleanups.push(() => held.forEach((s) => s.close()))
    const watch = (key: string) => openSse(`${url}/v1/watch?prefix=w%3A`, bearer(key))
    // A asks for all 20 slots: it gets its share, then TOO_MANY_WATCHERS naming the key's share.
    const refusedA: Record<string, unknown>[] = []
    for (let i = 0; i < 20; i++) {
      const opened = await watch(KEY_A)
      if (opened.ok) held.push(opened.stream)
      else {
        expect(opened.status).toBe(429)
        expect(Number(opened.headers.get('retry-after'))).toBeGreaterThan(0)
        refusedA.push(opened.body)
      }
    }
    expect(held).toHaveLength(2)
    expect(refusedA).toHaveLength(18)
    expect(refusedA[0]).toMatchObject({
      code: 'TOO_MANY_WATCHERS',
      details: { scope: 'key', limit: 2 },
    })
    // B still gets its share.
    for (let i = 0; i < 2; i++) {
      const opened = await watch(KEY_B)
      expect(opened.ok).toBe(true)
      if (opened.ok) held.push(opened.stream)
    }
    // A slot A frees is A's again, once the gateway has seen the feed go.
    held.shift()!.close()
    const again = await vi.waitFor(
      async () => {
        const opened = await watch(KEY_A)
        if (!opened.ok) throw new Error(JSON.stringify(opened.body))
        return opened.stream
      },
      { timeout: 10_000, interval: 50 },
    )
    held.push(again)
  })

  it('still caps the gateway as a whole', async () => {
    const cluster = await EmbeddedCluster.start({ regions: 1, partitions: 2, replicas: 1 })
    cleanups.push(() => cluster.close())
    const { url } = await listen(
      {
        auth: { apiKeys: [KEY_A, KEY_B] },
        watch: { maxWatchers: 3, maxWatchersPerKey: 2 },
      },
      cluster.service(0),
    )
    const held: SseStream[] = []
    cleanups.push(() => held.forEach((s) => s.close()))
    const watch = (key: string) => openSse(`${url}/v1/watch?prefix=w%3A`, bearer(key))
    for (const key of [KEY_A, KEY_A, KEY_B]) {
      const opened = await watch(key)
      if (!opened.ok) throw new Error(JSON.stringify(opened.body))
      held.push(opened.stream)
    }
    const refused = await watch(KEY_B)
    expect(!refused.ok && refused.body).toMatchObject({
      code: 'TOO_MANY_WATCHERS',
      details: { scope: 'gateway', limit: 3 },
    })
  })
})

describe('body bytes in flight: a global cap and a share per key, before any body is read', () => {
  // The largest body /v1/ops takes with the default value limit: 8 × (2 MiB + 1 KiB).
  const OPS_BODY_LIMIT = 8 * (2 * 1024 * 1024 + 1024)

  it('refuses twelve concurrent 16.8 MB /v1/ops bodies of one key past its share (defaults)', async () => {
    const { port } = await listen({ auth: { apiKeys: [KEY_A, KEY_B] } })
    // Twelve requests declare the largest body the route takes and send none of it: without a
    // budget each would be buffered as it came (the gateway grew by 400 MB).
    const conns = await Promise.all(Array.from({ length: 12 }, () => rawConnection(port)))
    for (const c of conns) sendOpsHead(c, KEY_A, OPS_BODY_LIMIT)
    // 64 MiB per key by default: three bodies fit, the other nine are refused at once.
    await vi.waitFor(() => expect(conns.filter((c) => c.data() !== '')).toHaveLength(9), {
      timeout: 10_000,
      interval: 20,
    })
    const refused = conns.filter((c) => c.data() !== '')
    for (const c of refused) {
      const { status, body } = await replyOf(c)
      expect(status).toBe(429)
      expect(body).toMatchObject({
        code: 'BODY_BUDGET_EXCEEDED',
        details: { scope: 'key', limit: 64 * 1024 * 1024, bytes: OPS_BODY_LIMIT },
      })
      expect(c.data()).toMatch(/retry-after: 1\r\n/i)
    }
    // Another tenant is not refused for A's bodies: its body is read (and found not to be JSON).
    const b = await rawConnection(port)
    sendOpsHead(b, KEY_B, 10)
    b.socket.write('not json!!')
    expect((await replyOf(b)).body).toMatchObject({ code: 'INVALID_JSON' })
  })

  it('refuses past the gateway-wide cap, and gives the bytes back when a request ends', async () => {
    const { port } = await listen({
      auth: { apiKeys: [KEY_A, KEY_B, KEY_C] },
      http: { maxBodyBytesInFlight: 1_500_000, maxBodyBytesInFlightPerKey: 1_000_000 },
    })
    const a1 = await rawConnection(port)
    sendOpsHead(a1, KEY_A, 600_000)
    a1.socket.write('{"ops":') // part of the body: the request stays in flight
    const a2 = await rawConnection(port)
    sendOpsHead(a2, KEY_A, 600_000)
    expect(await replyOf(a2)).toMatchObject({
      status: 429,
      body: { code: 'BODY_BUDGET_EXCEEDED', details: { scope: 'key', limit: 1_000_000 } },
    })
    const b1 = await rawConnection(port)
    sendOpsHead(b1, KEY_B, 600_000)
    const c1 = await rawConnection(port)
    sendOpsHead(c1, KEY_C, 600_000)
    expect(await replyOf(c1)).toMatchObject({
      status: 429,
      body: { code: 'BODY_BUDGET_EXCEEDED', details: { scope: 'gateway', limit: 1_500_000 } },
    })
    expect(a1.data() + b1.data()).toBe('')
    // A's first request goes (its client gave up): its bytes are A's and the gateway's again.
    a1.socket.destroy()
    await vi.waitFor(
      async () => {
        const a3 = await rawConnection(port)
        sendOpsHead(a3, KEY_A, 600_000)
        a3.socket.write('x'.repeat(600_000))
        expect((await replyOf(a3)).body).toMatchObject({ code: 'INVALID_JSON' })
      },
      { timeout: 10_000, interval: 100 },
    )
    // A request answered gives its bytes back too: another as large fits A's share again.
    const a4 = await rawConnection(port)
    sendOpsHead(a4, KEY_A, 600_000)
    a4.socket.write('x'.repeat(600_000))
    expect((await replyOf(a4)).body).toMatchObject({ code: 'INVALID_JSON' })
  })
})

describe('connections: a global cap and a share per client address', () => {
  it('keeps serving other addresses while one holds idle sockets up to the cap', async () => {
    // 100 idle sockets at maxConnections 100 locked everyone out; the same at 10.
    const { app, port } = await listen({ http: { maxConnections: 10 } })
    const idle = await Promise.all(Array.from({ length: 10 }, () => rawConnection(port)))
    // The address's share (a tenth of the cap: 1) is held; the other nine are closed at once.
    await vi.waitFor(() => expect(idle.filter((c) => c.isClosed())).toHaveLength(9), {
      timeout: 10_000,
      interval: 20,
    })
    const open = await new Promise<number>((resolve, reject) =>
      app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    )
    expect(open).toBe(1)
    // Another address is served.
    const other = await rawConnection(port, '127.0.0.2')
    other.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
    expect((await replyOf(other)).status).toBe(200)
  })
})

describe('refused requests count toward a rate limit per address', () => {
  it('answers RATE_LIMITED to an address after maxRefused 401s and 403s, and only to it', async () => {
    const app = buildGateway({
      service: new FakeClusterService(),
      regionUrls: ['http://a', 'http://b'],
      processMetrics: false,
      auth: { apiKeys: [KEY_A, { key: KEY_B, namespaces: ['cart'] }] },
      rateLimit: { max: 10_000, windowMs: 60_000, maxRefused: 5 },
    })
    cleanups.push(() => app.close())
    const from = (remoteAddress: string, key: string, url = '/v1/kv/cart:1') =>
      app.inject({ method: 'GET', url, headers: bearer(key), remoteAddress })
    // Three unknown keys (401) and two calls out of the key's scope (403).
    for (let i = 0; i < 3; i++)
      expect((await from('10.0.0.1', 'wrong-key-0123456789')).statusCode).toBe(401)
    for (let i = 0; i < 2; i++)
      expect((await from('10.0.0.1', KEY_B, '/v1/kv/user:1')).statusCode).toBe(403)
    // Now everything from that address is refused until the window ends, valid keys too...
    const limited = await from('10.0.0.1', KEY_A)
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({
      code: 'RATE_LIMITED',
      details: { limit: 5, windowMs: 60_000, refused: true },
    })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    // ... and nothing from other addresses, nor the health checks.
    expect((await from('10.0.0.2', KEY_A)).statusCode).toBe(200)
    expect(
      (await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '10.0.0.1' })).statusCode,
    ).toBe(200)
  })
})
