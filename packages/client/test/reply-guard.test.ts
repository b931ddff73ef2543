/**
 * An SDK that trusts no reply (issue 23, item 7): a reply's size is capped while it is read, in
 * both transports and in the change feed; an index or HLC beyond the gateway's own bounds is
 * refused before it reaches the session (so it never goes out in `causeway-after`/`causeway-dt`);
 * region URLs from the topology are http(s) only; credentials go only to trusted origins.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HEADER_AFTER, HEADER_DT, MAX_SAFE_COUNTER, hlcFrom } from '@causeway/core'
import { type Causeway, connect as connectFetch } from '../src/index.js'
import { connect as connectNode, httpTransport, undiciTransport } from '../src/node.js'
import {
  FakeGateway,
  fixtureTopology,
  readOk,
  rejection,
  sessionJSON,
  writeOk,
} from './fake-gateway.js'

const MiB = 1024 * 1024

let server: Server
let base: string
/** Bytes the server wrote of its endless replies, by path. */
const written = new Map<string, number>()

// Writes 64 KiB chunks for as long as the client reads them (up to 600 MB).
function endless(res: ServerResponse, path: string, first: string, type: string): void {
  res.writeHead(200, { 'content-type': type })
  const chunk = Buffer.alloc(64 * 1024, 'a'.charCodeAt(0))
  let sent = 0
  res.write(first)
  const pump = (): void => {
    while (sent < 600 * MiB && !res.destroyed) {
      sent += chunk.length
      written.set(path, sent)
      if (!res.write(chunk)) return void res.once('drain', pump)
    }
    res.end()
  }
  pump()
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url!.split('?')[0]!
  if (path === '/v1/topology') {
    res.writeHead(200, { 'content-type': 'application/json' })
    return void res.end(
      JSON.stringify({ ...fixtureTopology(), regions: [{ id: 0, name: 'local', url: base }] }),
    )
  }
  if (path.startsWith('/v1/kv/'))
    return endless(res, path, '{"found":true,"value":"', 'application/json')
  if (path === '/v1/watch') return endless(res, path, 'event: change\ndata: "', 'text/event-stream')
  res.writeHead(404).end()
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

describe('a reply larger than maxReplyBytes', () => {
  async function expectCapped(open: () => Promise<Causeway>, key: string): Promise<void> {
    const db = await open()
    const error = await rejection(db.get(key, { timeoutMs: 60_000 }))
    expect(error.code).toBe('REPLY_TOO_LARGE')
    expect(error.details).toMatchObject({ limit: MiB })
    // Stopped while reading: the server got no further than the cap and what sockets buffer.
    expect(written.get(`/v1/kv/${key}`)).toBeLessThan(64 * MiB)
    await db.close()
  }

  it('is REPLY_TOO_LARGE over fetch, read no further than the cap', async () => {
    await expectCapped(() => connectFetch({ url: base, maxReplyBytes: MiB }), 'big-fetch')
  }, 60_000)

  it('is REPLY_TOO_LARGE over undici, read no further than the cap', async () => {
    await expectCapped(
      () => connectNode({ url: base, maxReplyBytes: MiB, transport: undiciTransport() }),
      'big-undici',
    )
  }, 60_000)

  it('is REPLY_TOO_LARGE over node:http, read no further than the cap', async () => {
    await expectCapped(
      () => connectNode({ url: base, maxReplyBytes: MiB, transport: httpTransport() }),
      'big-http',
    )
  }, 60_000)

  it('one change-feed event larger than maxReplyBytes ends the watch with REPLY_TOO_LARGE', async () => {
    const db = await connectNode({ url: base, maxReplyBytes: MiB })
    const ended = new Promise<unknown>((resolve) => {
      db.watch('w:', () => {}, { onError: resolve })
    })
    const error = (await ended) as { code?: string }
    expect(error.code).toBe('REPLY_TOO_LARGE')
    expect(written.get('/v1/watch')).toBeLessThan(64 * MiB)
    await db.close()
  }, 60_000)

  it('maxReplyBytes must be an integer of at least 1024', async () => {
    const gw = new FakeGateway()
    for (const maxReplyBytes of [0, 1.5, '1', 1023]) {
      const error = await rejection(
        connectFetch({ url: 'http://us.test', transport: gw, maxReplyBytes } as never),
      )
      expect(error.code).toBe('INVALID_OPTION')
    }
  })
})

describe('a reply beyond the gateway bounds', () => {
  const FAR = 'ffffffffffffffff'
  const open = (gw: FakeGateway) =>
    connectFetch({ url: 'http://us.test', transport: gw, session: sessionJSON() })

  it('a read index of 2^53 - 1 is INVALID_REPLY and never goes out in causeway-after', async () => {
    const gw = new FakeGateway()
    const db = await open(gw)
    const key = 'k1'
    gw.reply(readOk({ idx: MAX_SAFE_COUNTER + 1 }), readOk({ idx: 2 }))
    expect((await rejection(db.get(key))).code).toBe('INVALID_REPLY')
    await db.get(key)
    expect(gw.kv[1]!.headers[HEADER_AFTER] ?? '').not.toContain(String(MAX_SAFE_COUNTER + 1))
    expect(JSON.stringify(db.session)).not.toContain(String(MAX_SAFE_COUNTER + 1))
  })

  it('a write ts of ffff... is INVALID_REPLY and never goes out in causeway-dt', async () => {
    const gw = new FakeGateway()
    const db = await open(gw)
    gw.reply(writeOk({ ts: FAR }), writeOk({ idx: 2 }))
    expect((await rejection(db.put('k1', 1))).code).toBe('INVALID_REPLY')
    await db.put('k1', 2)
    expect(gw.kv[1]!.headers[HEADER_DT]).toBe(hlcFrom(120, 0))
    expect(db.session.dtW).not.toBe(FAR)
  })

  it('a read ts of ffff... and a write epoch of 2^53 - 1 are INVALID_REPLY', async () => {
    const gw = new FakeGateway()
    const db = await open(gw)
    gw.reply(readOk({ ts: FAR }), writeOk({ epoch: MAX_SAFE_COUNTER + 1 }))
    expect((await rejection(db.get('k1'))).code).toBe('INVALID_REPLY')
    expect((await rejection(db.put('k1', 1))).code).toBe('INVALID_REPLY')
    expect(db.session.dtR).toBe(hlcFrom(120, 0))
  })

  it('a topology epoch of 2^53 - 1 is INVALID_REPLY', async () => {
    const gw = new FakeGateway(fixtureTopology({ epochs: [1, MAX_SAFE_COUNTER + 1, 1, 1] }))
    expect((await rejection(open(gw))).code).toBe('INVALID_REPLY')
  })
})

describe('region URLs and credentials', () => {
  it('a topology naming a javascript: region URL is INVALID_REPLY', async () => {
    const topology = fixtureTopology()
    topology.regions[1] = { id: 1, name: 'eu', url: 'javascript:alert(1)' }
    const error = await rejection(
      connectFetch({ url: 'http://us.test', transport: new FakeGateway(topology) }),
    )
    expect(error.code).toBe('INVALID_REPLY')
  })

  it('the API key goes only to the connected origin: a region elsewhere is UNTRUSTED_ORIGIN', async () => {
    const topology = fixtureTopology()
    topology.regions[1] = { id: 1, name: 'eu', url: 'http://collector.evil' }
    const gw = new FakeGateway(topology)
    const db = await connectFetch({ url: 'http://us.test', transport: gw, apiKey: 'secret' })
    for (const call of [
      db.get('k1', { region: 'eu' }),
      db.put('k1', 1, { region: 'eu' }),
      db.set('s').add('x', { region: 'eu' }),
    ]) {
      const error = await rejection(call)
      expect(error.code).toBe('UNTRUSTED_ORIGIN')
      expect(error.details).toMatchObject({ origin: 'http://collector.evil' })
    }
    const watched = new Promise<unknown>((resolve) =>
      db.watch('w:', () => {}, {
        region: 'eu',
        onError: resolve,
        fetch: () => Promise.reject(new Error('sent')),
      }),
    )
    expect(((await watched) as { code?: string }).code).toBe('UNTRUSTED_ORIGIN')
    expect(gw.requests.filter((r) => r.origin === 'http://collector.evil')).toEqual([])
    // The relative region URL stays on the connected origin, key and all.
    gw.reply(readOk())
    await db.get('k1', { region: 'ap' })
    expect(gw.requests.at(-1)!.headers.authorization).toBe('Bearer secret')
  })

  it('trustedOrigins lets credentials go to the other regions listed', async () => {
    const gw = new FakeGateway()
    const db = await connectFetch({
      url: 'http://us.test',
      transport: gw,
      apiKey: 'secret',
      trustedOrigins: ['http://eu.test/anything'],
    })
    gw.reply(readOk())
    await db.get('k1', { region: 'eu' })
    expect(gw.kv[0]!.origin).toBe('http://eu.test')
    expect(gw.kv[0]!.headers.authorization).toBe('Bearer secret')
    const error = await rejection(
      connectFetch({ url: 'http://us.test', transport: gw, trustedOrigins: ['ftp://x'] }),
    )
    expect(error.code).toBe('INVALID_OPTION')
    // Without credentials, any region the topology names is called.
    const elsewhere = fixtureTopology()
    elsewhere.regions[1] = { id: 1, name: 'eu', url: 'http://elsewhere.test' }
    const plain = new FakeGateway(elsewhere)
    const anonymous = await connectFetch({ url: 'http://us.test', transport: plain })
    plain.reply(readOk())
    await anonymous.get('k1', { region: 'eu' })
    expect(plain.kv[0]!.origin).toBe('http://elsewhere.test')
  })
})
