/**
 * The HTTP client of the shipping links: the part of `fetch` they use, over `node:http` with a
 * keep-alive agent. Measured on the 2-core benchmark machine, a shipping request through the
 * global `fetch` cost about four times the CPU of the same request through `node:http` (its
 * WHATWG streams, abort plumbing and body mixins), and every write is shipped, so the links use
 * this; tests inject a `fetch` of their own, which fits the same shape.
 */
import { Agent, request } from 'node:http'

/** What a shipping link sends. */
export interface ShippingRequestInit {
  method: string
  headers: Record<string, string>
  body: string | null
  signal: AbortSignal
}

/** What a shipping link reads of an answer. */
export interface ShippingResponse {
  ok: boolean
  status: number
  statusText: string
  json(): Promise<unknown>
}

/** The part of `fetch` a shipping link uses (`globalThis.fetch` is one). */
export type ShippingFetch = (url: string, init: ShippingRequestInit) => Promise<ShippingResponse>

/** A {@link ShippingFetch} over `node:http`, with `agent`'s kept-alive connections. */
export function keepAliveFetch(agent: Agent): ShippingFetch {
  return (url, init) =>
    new Promise<ShippingResponse>((resolve, reject) => {
      const headers =
        init.body === null
          ? init.headers
          : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) }
      const req = request(url, { method: init.method, headers, agent, signal: init.signal })
      req.on('error', reject)
      req.on('response', (res) => {
        const chunks: Buffer[] = []
        const body = new Promise<string>((done, fail) => {
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () => done(Buffer.concat(chunks).toString('utf8')))
          res.on('error', fail)
        })
        // An answer whose body never ends fails with the request's signal.
        body.catch(() => {})
        const status = res.statusCode ?? 0
        resolve({
          ok: status >= 200 && status < 300,
          status,
          statusText: res.statusMessage ?? '',
          json: async () => JSON.parse(await body) as unknown,
        })
      })
      req.end(init.body ?? undefined)
    })
}

/** A keep-alive agent for one link: its requests go one at a time, so one connection. */
export function shippingAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1 })
}
