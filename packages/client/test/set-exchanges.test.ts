/**
 * Sets go through the same read and write exchanges as keys (`client-access.ts`): against the
 * fake gateway, a set read retries exactly as `get` does, a set reply is checked whole before
 * the session records it, and set writes advance the session like `put`.
 */
import { describe, expect, it, vi } from 'vitest'
import { hlcFrom, partitionOf } from '@causeway/core'
import { SessionNotAvailableError, connect } from '../src/index.js'
import { FakeGateway, rejection, sessionJSON, waitsOut, writeOk } from './fake-gateway.js'

const t = (ms: number) => hlcFrom(ms, 0)

/** A set name in partition 1 of 4. */
const NAME = (() => {
  for (let n = 0; n < 1000; n++) if (partitionOf(`s${n}`, 4) === 1) return `s${n}`
  throw new Error('no name found')
})()

/** The meta every set read reply carries. */
function meta(fields: Record<string, unknown> = {}) {
  return { seen: [12, 3, 0], ts: t(200), epoch: 1, region: 0, replica: 0, waitedMs: 0, ...fields }
}

async function open() {
  const gw = new FakeGateway()
  const db = await connect({ url: 'http://us.test', transport: gw, session: sessionJSON() })
  const sets = () => gw.requests.filter((r) => r.path.startsWith('/v1/sets/'))
  return { db, gw, set: db.set(NAME), sets }
}

describe('set exchanges', () => {
  it('a set read retries as get does: the leader, then the home region, with one vector', async () => {
    const { db, gw, set, sets } = await open()
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      // Each replica waits out what it was allowed before it refuses.
      gw.reply(waitsOut(), waitsOut(), {
        status: 200,
        body: { found: true, ctx: 'c1', ...meta() },
      })
      const has = await set.has('x', { region: 'eu', replica: 'follower' })
      expect(has).toMatchObject({ found: true, ctx: 'c1', attempts: 3, seen: [12, 3, 0] })
      expect(sets().map((r) => [r.origin, r.query.replica])).toEqual([
        ['http://eu.test', 'follower'],
        ['http://eu.test', 'leader'],
        ['http://us.test', 'any'],
      ])
      expect(new Set(sets().map((r) => r.headers['causeway-after']))).toEqual(
        new Set(['0:9@1,1:3@1,2:4@1']),
      )
      // Recorded once, from the reply that served the read.
      expect(db.session.row(1)!.hrm).toEqual([12, 3, 0])
      expect(db.session.dtR).toBe(t(200))

      gw.reply(waitsOut(), waitsOut())
      const error = await rejection(set.size({ region: 'eu', timeoutMs: 2000 }))
      expect(error).toBeInstanceOf(SessionNotAvailableError)
      expect(error.details).toMatchObject({ attempts: 2 })
      expect(
        sets()
          .slice(3)
          .map((r) => [r.origin, r.query.timeoutMs]),
      ).toEqual([
        ['http://eu.test', '900'],
        ['http://us.test', '880'],
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('a malformed set reply is refused with INTERNAL and leaves the session alone', async () => {
    const { db, gw, set } = await open()
    const before = JSON.stringify(db.session)
    gw.reply(
      { status: 200, body: { size: -1, ...meta({ seen: [50, 50, 50] }) } },
      { status: 200, body: { found: 'yes', ...meta({ seen: [50, 50, 50] }) } },
      { status: 200, body: { elements: 'a', ...meta({ seen: [50, 50, 50] }) } },
      { status: 200, body: { size: 1, ...meta({ seen: [50, 50] }) } },
      writeOk({ idx: 0 }),
    )
    expect((await rejection(set.size())).code).toBe('INTERNAL')
    expect((await rejection(set.has('x'))).code).toBe('INTERNAL')
    expect((await rejection(set.scan()[Symbol.asyncIterator]().next())).code).toBe('INTERNAL')
    expect((await rejection(set.size())).code).toBe('INTERNAL')
    expect((await rejection(set.add('x'))).code).toBe('INTERNAL')
    expect(JSON.stringify(db.session)).toBe(before)
  })

  it('set writes advance the session as put does; a remove without a context sends the vector', async () => {
    const { db, gw, set, sets } = await open()
    const seen: string[] = []
    db.onSessionChange((s) => seen.push(s.dtW))
    gw.reply(writeOk({ idx: 8, ts: t(300) }), writeOk({ idx: 9, ts: t(400) }))
    const added = await set.add('x')
    expect(added).toMatchObject({ idx: 8, dc: 0, ts: t(300), region: 0, context: undefined })
    await set.remove('x')
    expect(db.session.row(1)!.hwm).toEqual([9, 0, 4])
    expect(seen).toEqual([t(300), t(400)])
    const [add, remove] = sets()
    expect([add!.method, add!.headers['causeway-dt'], add!.headers['causeway-after']]).toEqual([
      'POST',
      t(120), // level session: the later of dtW and dtR
      // The positions it follows: the leader refuses the add if a failover lost one of them.
      '0:9@1,1:3@1,2:4@1',
    ])
    expect(remove!.headers['causeway-after']).toBe('0:9@1,1:3@1,2:4@1')
    // The set routes take the leader's wait; the kv routes refuse it.
    expect(Number(add!.query.timeoutMs)).toBeGreaterThan(0)
    gw.reply(writeOk())
    await db.put('k', 1)
    expect(gw.kv.at(-1)!.query.timeoutMs).toBeUndefined()
  })
})
