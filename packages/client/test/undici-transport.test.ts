/**
 * The undici transport against a real HTTP server on 127.0.0.1: what it sends, what it returns,
 * and that its failures reach the SDK as the same errors as `httpTransport`'s.
 */
import { spawn } from 'node:child_process'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  CausewayError,
  type Transport,
  connect,
  httpTransport,
  undiciTransport,
} from '../src/node.js'
import { fixtureTopology } from './fake-gateway.js'

let server: Server
let base: string
/** Every connection the server accepted, open or closed. */
const connections = new Set<Socket>()
const seen: Array<{
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}> = []

function handle(req: IncomingMessage, res: ServerResponse): void {
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (c: string) => (body += c))
  req.on('end', () => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body })
    const path = req.url!.split('?')[0]
    switch (path) {
      case '/v1/topology':
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(
          JSON.stringify({ ...fixtureTopology(), regions: [{ id: 0, name: 'local', url: base }] }),
        )
      case '/json':
        res.writeHead(201, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ ok: true, city: 'Zürich' }))
      case '/echo':
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(body)
      case '/text':
        res.writeHead(502, { 'content-type': 'text/html' })
        return res.end('<html>bad gateway</html>')
      case '/empty':
        res.writeHead(204)
        return res.end()
      case '/big': {
        // Many chunks, with a two-byte character straddling each chunk boundary.
        res.writeHead(200, { 'content-type': 'application/json' })
        const text = JSON.stringify({ v: 'é'.repeat(50_000) })
        const bytes = Buffer.from(text)
        for (let i = 0; i < bytes.length; i += 4095) res.write(bytes.subarray(i, i + 4095))
        return res.end()
      }
      case '/hang':
      case '/v1/kv/hang':
        return // never answers
      case '/cut':
      case '/v1/kv/cut':
        // Promises 1000 bytes, sends 20, then drops the connection.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
        res.write('{"found":true,"value')
        setTimeout(() => req.socket.destroy(), 10)
        return
      case '/cut-chunked':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write('{"found":true,"value')
        setTimeout(() => req.socket.destroy(), 10)
        return
      default:
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ statusCode: 404, code: 'NOT_FOUND', message: path }))
    }
  })
}

beforeAll(async () => {
  server = createServer(handle)
  server.on('connection', (socket) => connections.add(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  return port
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error,
  )
}

/** Resolves once each of `sockets` is closed, or rejects after `ms`. */
async function allClosed(sockets: Socket[], ms: number): Promise<void> {
  const open = sockets.filter((s) => !s.destroyed)
  const closed = Promise.all(open.map((s) => new Promise((r) => s.once('close', r))))
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${open.length} connections still open`)), ms)
  })
  try {
    await Promise.race([closed, timeout])
  } finally {
    clearTimeout(timer)
  }
}

describe('undiciTransport', () => {
  let transport: Transport
  beforeAll(() => {
    transport = undiciTransport()
  })
  afterAll(async () => {
    await transport.close?.()
  })

  it('returns the status and the JSON body, and sends the headers as given', async () => {
    seen.length = 0
    const res = await transport.request({
      method: 'GET',
      url: base + '/json?level=session&replica=any',
      headers: { accept: 'application/json', 'causeway-after': '1@0:3' },
    })
    expect(res).toEqual({ status: 201, body: { ok: true, city: 'Zürich' } })
    expect(seen[0]!.url).toBe('/json?level=session&replica=any')
    expect(seen[0]!.method).toBe('GET')
    expect(seen[0]!.headers['causeway-after']).toBe('1@0:3')
    expect(seen[0]!.headers.host).toBe(base.slice('http://'.length))
  })

  it('a body that is not JSON, or no body, is undefined; the status still comes through', async () => {
    const text = await transport.request({ method: 'GET', url: base + '/text', headers: {} })
    expect(text).toEqual({ status: 502, body: undefined })
    const empty = await transport.request({ method: 'DELETE', url: base + '/empty', headers: {} })
    expect(empty).toEqual({ status: 204, body: undefined })
  })

  it('sends a POST body with its byte length, and reads a long multi-chunk reply whole', async () => {
    seen.length = 0
    const body = JSON.stringify({ value: { name: 'Ada', city: 'Zürich' } })
    const res = await transport.request({
      method: 'POST',
      url: base + '/echo',
      headers: { 'content-type': 'application/json' },
      body,
    })
    expect(res).toEqual({ status: 200, body: JSON.parse(body) })
    expect(seen[0]!.body).toBe(body)
    expect(seen[0]!.headers['content-length']).toBe(String(Buffer.byteLength(body)))
    const big = await transport.request({ method: 'GET', url: base + '/big', headers: {} })
    expect(big.body).toEqual({ v: 'é'.repeat(50_000) })
  })

  it('a URL with a query and no path goes to /', async () => {
    seen.length = 0
    const res = await transport.request({ method: 'GET', url: base + '?x=1', headers: {} })
    expect(res.status).toBe(404)
    expect(seen[0]!.url).toBe('/?x=1')
  })

  it('a URL undici cannot send to rejects', async () => {
    for (const url of ['not a url', 'ftp://127.0.0.1/x']) {
      expect(
        await rejection(transport.request({ method: 'GET', url, headers: {} })),
      ).toBeInstanceOf(Error)
    }
  })

  it('sequential requests reuse connections (keep-alive)', async () => {
    const own = undiciTransport()
    const before = connections.size
    for (let i = 0; i < 20; i++) {
      await own.request({ method: 'GET', url: base + '/json', headers: {} })
    }
    // undici waits one event-loop turn before reusing a connection, so back-to-back calls may
    // alternate between two; never one per call.
    expect(connections.size - before).toBeLessThanOrEqual(2)
    await own.close?.()
  })

  it('an abort rejects at once with the signal’s reason, in flight, queued or before sending', async () => {
    const own = undiciTransport({ connections: 1 })
    seen.length = 0
    const inFlight = new AbortController()
    const queued = new AbortController()
    const started = Date.now()
    const first = rejection(
      own.request({ method: 'GET', url: base + '/hang', headers: {}, signal: inFlight.signal }),
    )
    // The only connection is taken: this one waits in the pool's queue.
    const second = rejection(
      own.request({ method: 'GET', url: base + '/hang', headers: {}, signal: queued.signal }),
    )
    // Once the first is at the server, abort the queued one, then the one in flight.
    await vi.waitFor(() => expect(seen.map((s) => s.url)).toEqual(['/hang']))
    queued.abort('not an Error')
    expect(await second).toBe('not an Error')
    inFlight.abort(new Error('stop'))
    expect(((await first) as Error).message).toBe('stop')
    expect(Date.now() - started).toBeLessThan(1000)
    // The aborted request's connection was dropped; the pool still serves.
    const after = await own.request({ method: 'GET', url: base + '/json', headers: {} })
    expect(after.status).toBe(201)
    // The queued request was dropped before it was sent.
    expect(seen.map((s) => s.url)).toEqual(['/hang', '/json'])
    const already = rejection(
      own.request({ method: 'GET', url: base + '/json', headers: {}, signal: AbortSignal.abort() }),
    )
    expect(await already).toMatchObject({ name: 'AbortError' })
    await own.close?.()
  })

  it('a reply cut mid-body rejects, whether it had a length or was chunked', async () => {
    for (const path of ['/cut', '/cut-chunked']) {
      const error = await rejection(
        transport.request({ method: 'GET', url: base + path, headers: {} }),
      )
      expect(error).toBeInstanceOf(Error)
    }
    // The pool recovers from the dropped connection.
    expect(
      (await transport.request({ method: 'GET', url: base + '/json', headers: {} })).status,
    ).toBe(201)
  })

  it('a refused connection rejects with the same error as node:http', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/json`
    const viaHttp = httpTransport()
    const errors = await Promise.all(
      [transport, viaHttp].map((t) => rejection(t.request({ method: 'GET', url, headers: {} }))),
    )
    await viaHttp.close?.()
    for (const error of errors) expect(error).toMatchObject({ code: 'ECONNREFUSED' })
  })

  it('close() closes every connection and refuses later requests', async () => {
    const own = undiciTransport()
    const before = new Set(connections)
    await Promise.all(
      Array.from({ length: 4 }, () =>
        own.request({ method: 'GET', url: base + '/json', headers: {} }),
      ),
    )
    const hanging = rejection(own.request({ method: 'GET', url: base + '/hang', headers: {} }))
    await own.close?.()
    expect(await hanging).toBeInstanceOf(Error)
    const opened = [...connections].filter((s) => !before.has(s))
    expect(opened.length).toBeGreaterThanOrEqual(4)
    await allClosed(opened, 2000)
    const late = await rejection(own.request({ method: 'GET', url: base + '/json', headers: {} }))
    expect((late as Error).message).toMatch(/closed/)
  })

  it('a process that used it exits by itself once it is closed', async () => {
    // A child process: its exit code is the proof that close() leaves no handle open.
    const source = fileURLToPath(new URL('../src/undici-transport.ts', import.meta.url))
    const script = `
      void (async () => {
        const { undiciTransport } = await import(${JSON.stringify(source)})
        const t = undiciTransport()
        const res = await t.request({ method: 'GET', url: process.argv[1] + '/json', headers: {} })
        if (res.status !== 201) process.exitCode = 3
        // A request the server never answers holds its connection (and the process) open...
        const hanging = t.request({ method: 'GET', url: process.argv[1] + '/hang', headers: {} })
        hanging.catch(() => {})
        await new Promise((resolve) => setTimeout(resolve, 50))
        // ...until close(), after which nothing may be left to keep the process alive.
        await t.close()
      })()
    `
    // From the sources, as a clean clone has them (no dist/ before a build).
    const child = spawn(
      process.execPath,
      ['--conditions=@causeway/source', '--import', 'tsx', '--eval', script, base],
      { stdio: 'inherit' },
    )
    const killer = setTimeout(() => child.kill(), 10_000)
    const code = await new Promise((resolve) =>
      child.on('exit', (c, signal) => resolve(c ?? signal)),
    )
    clearTimeout(killer)
    expect(code).toBe(0)
  })
})

describe('the SDK over undiciTransport and httpTransport alike', () => {
  const transports = { undici: undiciTransport, http: httpTransport }

  it('connect() to a closed port is a NETWORK_ERROR caused by ECONNREFUSED', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    for (const make of Object.values(transports)) {
      const transport = make()
      const error = await rejection(connect({ url, transport }))
      await transport.close?.()
      expect(error).toBeInstanceOf(CausewayError)
      expect((error as CausewayError).code).toBe('NETWORK_ERROR')
      expect((error as CausewayError).cause).toMatchObject({ code: 'ECONNREFUSED' })
    }
    // And the Node entry's default.
    expect(await rejection(connect({ url }))).toMatchObject({ code: 'NETWORK_ERROR' })
  })

  it('a cut reply is a NETWORK_ERROR, a deadline a TIMEOUT, a caller abort its reason', async () => {
    for (const [name, make] of Object.entries(transports)) {
      const transport = make()
      const db = await connect({ url: base, transport, defaults: { retry: false } })
      const cut = await rejection(db.get('cut'))
      expect([name, (cut as CausewayError).code]).toEqual([name, 'NETWORK_ERROR'])
      const slow = await rejection(db.get('hang', { timeoutMs: 100 }))
      expect([name, (slow as CausewayError).code]).toEqual([name, 'TIMEOUT'])
      const caller = new AbortController()
      seen.length = 0
      const aborting = rejection(db.get('hang', { signal: caller.signal }))
      // Aborted while the server holds it.
      await vi.waitFor(() => expect(seen.length).toBe(1))
      caller.abort(new Error('user gave up'))
      const aborted = await aborting
      expect([name, (aborted as Error).message]).toEqual([name, 'user gave up'])
      // close() while a call is in flight: SHUTTING_DOWN.
      const pending = rejection(db.get('hang'))
      await db.close()
      expect([name, ((await pending) as CausewayError).code]).toEqual([name, 'SHUTTING_DOWN'])
      await transport.close?.()
    }
  })
})
