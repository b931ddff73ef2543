import { describe, expect, it } from 'vitest'
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

  it('a network failure rejects (the client turns it into NETWORK_ERROR)', async () => {
    const transport = fetchTransport({
      fetch: async () => {
        throw new TypeError('fetch failed')
      },
    })
    await expect(
      transport.request({ method: 'GET', url: 'http://gw.test/', headers: {} }),
    ).rejects.toThrow('fetch failed')
  })
})
