/**
 * The replay against replies a gateway should never send (a proxy's, a broken deployment's): a
 * `POST /v1/ops` answered 200 without a result for every op, or with a malformed one. The replay
 * stops with a typed error and keeps the ops queued; it never loops on the reply, and never
 * records a result it could not check.
 */
import { MemoryLevel } from 'memory-level'
import { expect, it } from 'vitest'
import { CausewayError, connect, type PersistStore } from '../src/node.js'
import type { TransportResponse } from '../src/transport.js'
import { FakeGateway, writeOk } from './fake-gateway.js'

const malformed: [string, unknown][] = [
  ['no body', undefined],
  ['no results', {}],
  ['results not an array', { results: 'yes' }],
  ['fewer results than ops, no error', { results: [writeOk().body] }],
  ['more results than ops', { results: [writeOk().body, writeOk().body, writeOk().body] }],
  ['a result that is not a write reply', { results: [writeOk().body, { ts: 'soon' }] }],
  [
    'an error at an index that is not the next op',
    { results: [], error: { index: 1, statusCode: 400, code: 'INVALID_VALUE', message: 'x' } },
  ],
]

it.each(malformed)(
  'an ops reply with %s: sync() stops with INTERNAL, both ops stay queued',
  async (_, body) => {
    const gw = new FakeGateway()
    const db = await connect({
      url: 'http://us.test',
      transport: gw,
      persist: new MemoryLevel() as unknown as PersistStore,
      defaults: { timeoutMs: 1000 },
    })
    try {
      // Offline: both queued.
      gw.reply({ throws: new TypeError('fetch failed') })
      expect(await db.put('a', 1)).toMatchObject({ pending: true })
      expect(await db.put('b', 2)).toMatchObject({ pending: true })
      // Every replay gets the malformed reply until `good` (the client also replays by itself,
      // as it takes the outbox over: that one may be the first to get it).
      let good = false
      const answer = (): TransportResponse =>
        good
          ? { status: 200, body: { results: [writeOk().body, writeOk({ idx: 2 }).body] } }
          : { status: 200, body }
      gw.reply(...Array.from({ length: 20 }, () => answer))
      const before = gw.requests.length
      const result = await db.sync()
      expect(result.error).toBeInstanceOf(CausewayError)
      expect(result.error?.code).toBe('INTERNAL')
      expect(result).toMatchObject({ applied: 0, pending: 2 })
      // No loop on the reply: a replay or two, then the backoff.
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(gw.requests.slice(before).length).toBeLessThanOrEqual(2)
      expect((await db.pending()).map((o) => o.key)).toEqual(['a', 'b'])
      // A good reply later applies them.
      good = true
      let applied = 0
      for (let i = 0; i < 3 && applied < 2; i++) applied += (await db.sync()).applied
      expect(applied).toBe(2)
      expect(await db.pending()).toEqual([])
    } finally {
      await db.close()
    }
  },
)
