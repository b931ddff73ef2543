/**
 * The shipping links' HTTP client over `node:http`: it sends what `fetch` would, reads the JSON
 * answer, keeps one connection for a link's requests, and gives up when its signal aborts.
 */
import { type IncomingMessage, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { keepAliveFetch, shippingAgent } from '../../src/replication/keep-alive-fetch.js'

const cleanup: (() => void)[] = []
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn()
})

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  socket: unknown
}

async function server(answer: (seen: Seen) => { status: number; body: string } | 'hang') {
  const seen: Seen[] = []
  const http = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (body += chunk))
    req.on('end', () => {
      const s = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body,
        socket: req.socket,
      }
      seen.push(s)
      const a = answer(s)
      if (a === 'hang') return
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body)
    })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  cleanup.push(() => {
    http.closeAllConnections()
    http.close()
  })
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, seen }
}

describe('keepAliveFetch', () => {
  it('posts JSON, reads the answer, and keeps one connection for consecutive requests', async () => {
    const { url, seen } = await server((s) => ({
      status: 200,
      body: JSON.stringify({ checkpoint: s.body.length }),
    }))
    const agent = shippingAgent()
    cleanup.push(() => agent.destroy())
    const fetch = keepAliveFetch(agent)
    const signal = new AbortController().signal
    const body = JSON.stringify({ entries: ['ü'] })
    const post = await fetch(`${url}/v1/internal/ship/1/0`, {
      method: 'POST',
      headers: { authorization: 'Bearer s', 'content-type': 'application/json' },
      body,
      signal,
    })
    expect(post.ok).toBe(true)
    expect(post.status).toBe(200)
    expect(await post.json()).toEqual({ checkpoint: body.length })
    const get = await fetch(`${url}/v1/internal/ship/1/0`, {
      method: 'GET',
      headers: { authorization: 'Bearer s' },
      body: null,
      signal,
    })
    expect(await get.json()).toEqual({ checkpoint: 0 })
    expect(seen.map((s) => [s.method, s.url, s.headers.authorization])).toEqual([
      ['POST', '/v1/internal/ship/1/0', 'Bearer s'],
      ['GET', '/v1/internal/ship/1/0', 'Bearer s'],
    ])
    // The UTF-8 length, not the string's.
    expect(seen[0]!.headers['content-length']).toBe(String(Buffer.byteLength(body)))
    expect(seen[1]!.socket).toBe(seen[0]!.socket)
  })

  it('answers an error status as not ok, with its body', async () => {
    const { url } = await server(() => ({ status: 503, body: '{"code":"BACKEND_UNAVAILABLE"}' }))
    const agent = shippingAgent()
    cleanup.push(() => agent.destroy())
    const res = await keepAliveFetch(agent)(url, {
      method: 'GET',
      headers: {},
      body: null,
      signal: new AbortController().signal,
    })
    expect([res.ok, res.status]).toEqual([false, 503])
    expect(await res.json()).toEqual({ code: 'BACKEND_UNAVAILABLE' })
  })

  it('rejects when its signal aborts a request that gets no answer', async () => {
    const { url, seen } = await server(() => 'hang')
    const agent = shippingAgent()
    cleanup.push(() => agent.destroy())
    const abort = new AbortController()
    const pending = keepAliveFetch(agent)(url, {
      method: 'POST',
      headers: {},
      body: '{}',
      signal: abort.signal,
    })
    await expect.poll(() => seen.length).toBe(1)
    abort.abort(new Error('no answer in time'))
    await expect(pending).rejects.toThrow()
  })
})
