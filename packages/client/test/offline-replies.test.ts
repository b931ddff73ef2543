/**
 * The replay against replies a gateway should never send (a proxy's, a broken deployment's): a
 * `POST /v1/ops` answered 200 without a result for every op, or with a malformed one. The replay
 * stops with a typed error and keeps the ops queued; it never loops on the reply, and never
 * records a result it could not check.
 */
import { MemoryLevel } from 'memory-level'
import { expect, it } from 'vitest'
import { CausewayError, connect, type PersistStore } from '../src/node.js'
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
      const before = gw.requests.length
      gw.reply({ status: 200, body })
      const result = await db.sync()
      expect(result.error).toBeInstanceOf(CausewayError)
      expect(result.error?.code).toBe('INTERNAL')
      expect(result).toMatchObject({ applied: 0, pending: 2 })
      // One request: the replay did not send the batch again on the same reply.
      expect(gw.requests.slice(before).map((r) => r.path)).toEqual(['/v1/ops'])
      expect((await db.pending()).map((o) => o.key)).toEqual(['a', 'b'])
      // A good reply later applies them.
      gw.reply({ status: 200, body: { results: [writeOk().body, writeOk({ idx: 2 }).body] } })
      expect(await db.sync()).toMatchObject({ applied: 2, pending: 0 })
    } finally {
      await db.close()
    }
  },
)
