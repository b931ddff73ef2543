/**
 * Time and connection limits over real sockets against a listening gateway: a body that stops
 * arriving, a request that trickles, headers that never end and an idle connection are each cut
 * within their configured limit, with a 408 in the gateway's error format where a reply is
 * possible; a connection over the cap is closed; Node's own refusals (431, a garbage request)
 * come in the gateway's error format too.
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import type { HttpLimits } from '../../src/http/http-limits.js'
import { resolveHttpLimits } from '../../src/http/http-limits.js'
import { FakeClusterService } from './fake-cluster-service.js'

let app: Gateway | undefined
const sockets: Socket[] = []

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await app?.close()
  app = undefined
})

async function listen(http: HttpLimits): Promise<{ port: number; service: FakeClusterService }> {
  const service = new FakeClusterService()
  app = buildGateway({ service, regionUrls: ['http://a', 'http://b'], processMetrics: false, http })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return { port: address.port, service }
}

interface Connection {
  socket: Socket
  /** Everything received until the connection closed. */
  closed: Promise<{ data: string; afterMs: number }>
}

function open(port: number): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const socket = connect({ host: '127.0.0.1', port })
    sockets.push(socket)
    let data = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => (data += chunk))
    socket.on('error', () => undefined)
    const closed = new Promise<{ data: string; afterMs: number }>((done) =>
      socket.once('close', () => done({ data, afterMs: performance.now() - started })),
    )
    socket.once('connect', () => resolve({ socket, closed }))
    socket.once('error', reject)
  })
}

/** The status line and the JSON body of a raw HTTP reply. */
function parseReply(data: string): { status: number; body: Record<string, unknown> } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1])
  const body = data.slice(data.indexOf('\r\n\r\n') + 4)
  return { status, body: JSON.parse(body) as Record<string, unknown> }
}

async function openConnections(app: Gateway): Promise<number> {
  return new Promise((resolve, reject) =>
    app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  )
}

const PARTIAL_PUT =
  'PUT /v1/kv/k HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"value":'

describe('http limits', () => {
  it('drops a body that stops arriving (content-length 100, 9 bytes sent) within bodyTimeoutMs', async () => {
    const { port, service } = await listen({ bodyTimeoutMs: 500 })
    const c = await open(port)
    c.socket.write(PARTIAL_PUT)
    const { data, afterMs } = await c.closed
    expect(afterMs).toBeGreaterThanOrEqual(450)
    expect(afterMs).toBeLessThan(2500)
    expect(parseReply(data)).toMatchObject({
      status: 408,
      body: { statusCode: 408, code: 'REQUEST_TIMEOUT' },
    })
    expect(service.writes).toEqual([])
    // Nothing of it is left on the server.
    expect(await openConnections(app!)).toBe(0)
  })

  it('keeps a body that arrives slowly but steadily, and stores it whole', async () => {
    const { port, service } = await listen({ bodyTimeoutMs: 600 })
    const c = await open(port)
    const body = '{"value":"slow"}'
    c.socket.write(
      `PUT /v1/kv/k HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    )
    for (const chunk of body.match(/.{1,4}/g)!) {
      c.socket.write(chunk)
      await new Promise((r) => setTimeout(r, 250))
    }
    const { data } = await c.closed
    expect(parseReply(data).status).toBe(200)
    expect(service.writes.map((w) => w.value)).toEqual(['"slow"'])
  })

  it('cuts a request that trickles past requestTimeoutMs, each byte within the body timeout', async () => {
    const { port, service } = await listen({
      bodyTimeoutMs: 1000,
      headersTimeoutMs: 1000,
      requestTimeoutMs: 1500,
    })
    const c = await open(port)
    c.socket.write(PARTIAL_PUT)
    const trickle = setInterval(() => c.socket.write(' '), 200)
    const { data, afterMs } = await c.closed
    clearInterval(trickle)
    expect(afterMs).toBeGreaterThanOrEqual(1400)
    // Node checks its request deadlines once a second.
    expect(afterMs).toBeLessThan(4000)
    expect(parseReply(data)).toMatchObject({ status: 408, body: { code: 'REQUEST_TIMEOUT' } })
    expect(service.writes).toEqual([])
  })

  it('cuts headers that never end within headersTimeoutMs', async () => {
    const { port } = await listen({ headersTimeoutMs: 800, requestTimeoutMs: 5000 })
    const c = await open(port)
    c.socket.write('GET /v1/kv/k HTTP/1.1\r\nhost: x\r\nx-slow: ')
    const { data, afterMs } = await c.closed
    expect(afterMs).toBeLessThan(3000)
    expect(parseReply(data)).toMatchObject({ status: 408, body: { code: 'REQUEST_TIMEOUT' } })
  })

  it('closes a connection silent for connectionTimeoutMs', async () => {
    const { port } = await listen({ connectionTimeoutMs: 600 })
    const c = await open(port)
    const { afterMs } = await c.closed
    expect(afterMs).toBeGreaterThanOrEqual(550)
    expect(afterMs).toBeLessThan(3000)
  })

  it('refuses connections over maxConnections and serves those under it', async () => {
    const { port } = await listen({ maxConnections: 2, maxConnectionsPerAddress: 2 })
    const first = await open(port)
    const second = await open(port)
    // Both are accepted and held (the server counts them before the third arrives).
    await vi.waitFor(async () => expect(await openConnections(app!)).toBe(2))
    const third = await open(port)
    const refused = await third.closed
    expect(refused.data).toBe('')
    for (const c of [first, second]) {
      c.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
      expect(parseReply((await c.closed).data).status).toBe(200)
    }
  })

  it("answers Node's own refusals in the gateway's error format", async () => {
    const { port } = await listen({})
    const big = await open(port)
    big.socket.write(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(parseReply((await big.closed).data)).toMatchObject({
      status: 431,
      body: { statusCode: 431, code: 'HEADERS_TOO_LARGE' },
    })
    const garbage = await open(port)
    garbage.socket.write('GARBAGE\r\n\r\n')
    expect(parseReply((await garbage.closed).data)).toMatchObject({
      status: 400,
      body: { statusCode: 400, code: 'INVALID_REQUEST' },
    })
  })

  it('has safe defaults and refuses limits that make no sense', () => {
    expect(resolveHttpLimits(undefined, 60_000)).toEqual({
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      connectionTimeoutMs: 120_000,
      maxConnections: 10_000,
      maxConnectionsPerAddress: 1000,
      maxBodyBytesInFlight: 256 * 1024 * 1024,
      maxBodyBytesInFlightPerKey: 64 * 1024 * 1024,
    })
    // An address's share follows the cap unless set.
    expect(resolveHttpLimits({ maxConnections: 100 }, 1).maxConnectionsPerAddress).toBe(10)
    expect(resolveHttpLimits({ maxConnections: 5 }, 1).maxConnectionsPerAddress).toBe(1)
    // A read may wait up to maxTimeoutMs without a byte on its connection.
    expect(resolveHttpLimits(undefined, 600_000).connectionTimeoutMs).toBe(610_000)
    expect(() => resolveHttpLimits({ bodyTimeoutMs: 0 }, 60_000)).toThrow(RangeError)
    expect(() => resolveHttpLimits({ headersTimeoutMs: 5000, requestTimeoutMs: 1000 }, 1)).toThrow(
      /headersTimeoutMs/,
    )
  })
})
