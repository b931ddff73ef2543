import { CausewayError } from '@causeway/core'
import { describe, expect, it, vi } from 'vitest'
import { fetchTransport } from '../src/index.js'

describe('fetchTransport', () => {
  it('passes method, headers, body and signal to fetch and parses the JSON reply', async () => {
    const calls: Array<[string, RequestInit]> = []
    const transport = fetchTransport({
      fetch: async (url, init) => {
        calls.push([String(url), init!])
        return new Response('{"ok":true}', { status: 201 })
      },
    })
    const signal = new AbortController().signal
    const res = await transport.request({
      method: 'PUT',
      url: 'http://gw.test/v1/kv/a',
      headers: { 'causeway-dt': '0000000000000001' },
      body: '{"value":1}',
      signal,
    })
    expect(res).toEqual({ status: 201, body: { ok: true } })
    expect(calls[0]![0]).toBe('http://gw.test/v1/kv/a')
    expect(calls[0]![1]).toMatchObject({
      method: 'PUT',
      headers: { 'causeway-dt': '0000000000000001' },
      body: '{"value":1}',
      signal,
    })
  })

  it('a reply that is not JSON has an undefined body; the status still arrives', async () => {
    for (const text of ['<html>bad gateway</html>', '']) {
      const transport = fetchTransport({ fetch: async () => new Response(text, { status: 502 }) })
      expect(
        await transport.request({ method: 'GET', url: 'http://gw.test/', headers: {} }),
      ).toEqual({
        status: 502,
        body: undefined,
      })
    }
  })

  it('a network failure is a NETWORK_ERROR naming the URL, and the reason Node hides in its cause', async () => {
    const cause = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })
    const transport = fetchTransport({
      fetch: async () => {
        throw cause
      },
    })
    const error = await rejection(
      transport.request({ method: 'GET', url: 'http://gw.test/v1/kv/a', headers: {} }),
    )
    expect(error).toBeInstanceOf(CausewayError)
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.details).toEqual({ url: 'http://gw.test/v1/kv/a' })
    expect(error.message).toBe(
      'GET http://gw.test/v1/kv/a failed: fetch failed (connect ECONNREFUSED)',
    )
    expect(error.cause).toBe(cause)
  })

  it('in a browser, says that CORS, a proxy or being offline are the likely causes', async () => {
    vi.stubGlobal('location', { origin: 'http://localhost:5173' })
    vi.stubGlobal('navigator', { onLine: false })
    try {
      const transport = fetchTransport({
        fetch: async () => {
          throw new TypeError('Failed to fetch')
        },
      })
      const error = await rejection(
        transport.request({ method: 'PUT', url: 'http://127.0.0.1:7071/v1/kv/a?x=1', headers: {} }),
      )
      expect(error.code).toBe('NETWORK_ERROR')
      expect(error.message).toContain(
        'PUT http://127.0.0.1:7071/v1/kv/a?x=1 failed: Failed to fetch',
      )
      expect(error.message).toContain('The browser reports that it is offline')
      expect(error.message).toContain(
        'the gateway at http://127.0.0.1:7071 does not allow pages of http://localhost:5173 (CORS: start it with --cors-origin http://localhost:5173)',
      )
      expect(error.message).toMatch(
        /a proxy in between refused the request, or the network is offline/,
      )
    } finally {
      vi.unstubAllGlobals()
    }
  })

  it('an aborted request rejects with the abort, not a network error', async () => {
    const controller = new AbortController()
    const reason = new Error('deadline')
    const transport = fetchTransport({
      fetch: async () => {
        controller.abort(reason)
        throw reason
      },
    })
    const error = await rejection(
      transport.request({
        method: 'GET',
        url: 'http://gw.test/',
        headers: {},
        signal: controller.signal,
      }),
    )
    expect(error).toBe(reason)
  })
})

async function rejection(promise: Promise<unknown>): Promise<CausewayError> {
  try {
    await promise
  } catch (error) {
    return error as CausewayError
  }
  throw new Error('expected a rejection')
}
