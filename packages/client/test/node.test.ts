import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CausewayError, connect, fileSessionStore, httpTransport } from '../src/node.js'
import { fixtureTopology } from './fake-gateway.js'

/** A tiny HTTP server that answers like a gateway and records what it received. */
let server: Server
let base: string
const seen: Array<{
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  socket: number
}> = []
const sockets = new Map<unknown, number>()

function handle(req: IncomingMessage, res: ServerResponse): void {
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (c: string) => (body += c))
  req.on('end', () => {
    if (!sockets.has(req.socket)) sockets.set(req.socket, sockets.size)
    seen.push({
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      body,
      socket: sockets.get(req.socket)!,
    })
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(json))
    }
    if (req.url === '/v1/topology') {
      return send(200, { ...fixtureTopology(), regions: [{ id: 0, name: 'local', url: base }] })
    }
    if (req.url?.startsWith('/v1/kv/slow')) return // never answers: the client must time out
    if (req.method === 'PUT') {
      return send(200, { ts: '0000000000640000', dc: 0, idx: 3, epoch: 1, region: 0 })
    }
    if (req.url?.startsWith('/v1/kv/missing')) {
      return send(503, {
        statusCode: 503,
        code: 'SESSION_NOT_AVAILABLE',
        message: 'not yet',
        details: { need: { 0: 3 }, sv: { 0: 1 } },
      })
    }
    send(200, {
      found: true,
      value: JSON.parse(body || '{"v":"é"}'),
      ts: '0000000000640000',
      dc: 0,
      idx: 3,
      epoch: 1,
      region: 0,
      replica: 1,
      waitedMs: 0,
    })
  })
}

beforeAll(async () => {
  server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('@causeway/client/node', () => {
  // undici (the default) waits one event-loop turn before reusing a connection, so back-to-back
  // calls may alternate between two; node:http reuses its one socket at once.
  it.each([
    { name: 'undici (the default)', transport: undefined, sockets: 2 },
    { name: 'node:http', transport: httpTransport, sockets: 1 },
  ])('connect() over $name keeps connections alive across sequential calls', async (c) => {
    seen.length = 0
    const transport = c.transport?.()
    const db = await connect({ url: base, transport })
    const put = await db.put('user:1', { name: 'Ada', city: 'Zürich' })
    expect(put).toMatchObject({
      pending: false,
      ts: '0000000000640000',
      dc: 0,
      idx: 3,
      epoch: 1,
      region: 0,
    })
    const got = await db.get('user:1')
    expect(got.value).toEqual({ v: 'é' })
    // Read-your-writes carried over the real transport.
    expect(seen[2]!.headers['causeway-after']).toBe('0:3@1')
    expect(JSON.parse(seen[1]!.body)).toEqual({ value: { name: 'Ada', city: 'Zürich' } })
    expect(seen[1]!.headers['content-length']).toBe(String(Buffer.byteLength(seen[1]!.body)))
    for (let i = 0; i < 10; i++) await db.get('user:1')
    expect(new Set(seen.map((s) => s.socket)).size).toBeLessThanOrEqual(c.sockets)
    await db.close()
    await transport?.close?.()
  })

  it('maps a server error, a deadline and a refused connection to typed errors', async () => {
    const db = await connect({ url: base, defaults: { retry: false } })
    const sna = await db.get('missing').catch((e: unknown) => e)
    expect(sna).toBeInstanceOf(CausewayError)
    expect((sna as CausewayError).code).toBe('SESSION_NOT_AVAILABLE')
    const slow = await db.get('slow', { timeoutMs: 100 }).catch((e: unknown) => e)
    expect((slow as CausewayError).code).toBe('TIMEOUT')
    await db.close()

    // A port nothing listens on: bind one, then close it.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    const refused = await connect({ url: `http://127.0.0.1:${port}` }).catch((e: unknown) => e)
    expect((refused as CausewayError).code).toBe('NETWORK_ERROR')
  })

  it('httpTransport can be passed to the browser-safe connect too, and closes its sockets', async () => {
    const transport = httpTransport({ maxSockets: 2 })
    const res = await transport.request({ method: 'GET', url: base + '/v1/topology', headers: {} })
    expect(res.status).toBe(200)
    expect((res.body as { cluster: string }).cluster).toBe('test-cluster')
    await transport.close?.()
  })
})

describe('fileSessionStore', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-session-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('saves a session and restores it into a new client', async () => {
    const store = fileSessionStore(join(dir, 'session.json'))
    expect(await store.load()).toBeUndefined()
    const a = await connect({ url: base })
    await a.put('k', 1)
    await store.save(a.session)
    await a.close()
    const b = await connect({ url: base, session: await store.load() })
    expect(b.session.toJSON()).toEqual(a.session.toJSON())
    await b.close()
  })

  it('a corrupt file rejects the connect with INVALID_SESSION', async () => {
    const path = join(dir, 'corrupt.json')
    await writeFile(path, '{"v":1,"cluster":')
    const store = fileSessionStore(path)
    const error = await connect({ url: base, session: await store.load() }).catch((e: unknown) => e)
    expect((error as CausewayError).code).toBe('INVALID_SESSION')
    expect(await readFile(path, 'utf8')).toBe('{"v":1,"cluster":')
  })
})
