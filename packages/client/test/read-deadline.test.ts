/**
 * A read spends its whole `timeoutMs`, whoever answered first, and with `fallback: 'home'` asks
 * the home region inside that same deadline. The gateway is a stub on fake timers: each replica
 * "waits" by moving the clock, so the budget arithmetic is checked exactly, without sleeping.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { partitionOf } from '@causeway/core'
import {
  type Causeway,
  type ConnectOptions,
  SessionNotAvailableError,
  connect,
} from '../src/index.js'
import {
  FakeGateway,
  notAvailable,
  readOk,
  rejection,
  sessionJSON,
  waitsOut,
} from './fake-gateway.js'

function keyIn(p: number): string {
  for (let n = 0; n < 1000; n++) if (partitionOf(`k${n}`, 4) === p) return `k${n}`
  throw new Error('no key found')
}
/** In partition 1, which the fixture's session has read and written. */
const KEY = keyIn(1)
const VECTOR = '0:9@1,1:3@1,2:4@1'

async function open(
  options: Partial<ConnectOptions> = {},
): Promise<{ db: Causeway; gw: FakeGateway }> {
  const gw = new FakeGateway()
  const db = await connect({
    url: 'http://us.test',
    transport: gw,
    session: sessionJSON(),
    ...options,
  })
  return { db, gw }
}

const waits = (gw: FakeGateway) =>
  gw.kv.map((r) => [r.origin, r.query.replica, Number(r.query.timeoutMs)])

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
})
afterEach(() => {
  vi.useRealTimers()
})

describe('a read uses its whole timeoutMs', () => {
  it('the leader that answers first may wait all of it but the reply margin; the call fails at the deadline, not half of it', async () => {
    const { db, gw } = await open()
    // The gateway served `any` from its leader (no replica covered), which waited it out.
    gw.reply(waitsOut(notAvailable({ role: 'leader' })))
    const started = Date.now()
    const error = await rejection(db.get(KEY, { timeoutMs: 1000 }))
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect(waits(gw)).toEqual([['http://us.test', 'any', 900]])
    expect(Date.now() - started).toBe(920)
  })

  it('a leader that was told not covered before its wait could end is asked again with the rest', async () => {
    const { db, gw } = await open()
    // A gateway that waits at most 400 ms whatever it is asked.
    const capped = waitsOut(notAvailable({ role: 'leader' }), 400)
    gw.reply(capped, capped, capped)
    const started = Date.now()
    const error = await rejection(db.get(KEY, { timeoutMs: 1000 }))
    expect(error.code).toBe('SESSION_NOT_AVAILABLE')
    // 900 ms to wait: 420 ms spent, the next attempt gets the remaining 480, then 60.
    expect(waits(gw)).toEqual([
      ['http://us.test', 'any', 900],
      ['http://us.test', 'leader', 480],
      ['http://us.test', 'leader', 60],
    ])
    expect(Date.now() - started).toBe(920)
    expect(error.details).toMatchObject({ attempts: 3 })
  })

  it('the leader serves what it was asked again for, within the deadline', async () => {
    const { db, gw } = await open()
    gw.reply(waitsOut(notAvailable({ role: 'leader' }), 400), waitsOut(readOk({ idx: 12 }), 100))
    const started = Date.now()
    const r = await db.get(KEY, { timeoutMs: 1000 })
    expect(r.attempts).toBe(2)
    expect(Date.now() - started).toBe(540)
    expect(gw.kv.map((q) => q.headers['causeway-after'])).toEqual([VECTOR, VECTOR])
    expect(db.session.row(1)!.hrm[0]).toBe(12)
  })

  it('a forced follower waits half, the leader the rest', async () => {
    const { db, gw } = await open()
    gw.reply(waitsOut(notAvailable({ role: 'follower' })), waitsOut())
    const started = Date.now()
    await rejection(db.get(KEY, { timeoutMs: 1000, replica: 'follower' }))
    expect(waits(gw)).toEqual([
      ['http://us.test', 'follower', 450],
      ['http://us.test', 'leader', 430],
    ])
    expect(Date.now() - started).toBe(920)
  })
})

describe("fallback: 'home'", () => {
  it('is the default: another region that cannot cover gets half, the home region serves within the deadline', async () => {
    const { db, gw } = await open()
    gw.reply(
      waitsOut(notAvailable({ role: 'leader' })),
      waitsOut(readOk({ dc: 0, idx: 10, region: 0 }), 30),
    )
    const started = Date.now()
    const r = await db.get(KEY, { region: 'eu', timeoutMs: 1000 })
    expect(r).toMatchObject({ found: true, region: 0, attempts: 2 })
    expect(waits(gw)).toEqual([
      ['http://eu.test', 'any', 450],
      ['http://us.test', 'any', 430],
    ])
    expect(Date.now() - started).toBeLessThan(1000)
    // The same vector both times; the home reply moved the session as any read does.
    expect(gw.kv.map((q) => q.headers['causeway-after'])).toEqual([VECTOR, VECTOR])
    expect(db.session.row(1)!.hrm).toEqual([10, 3, 0])
  })

  it('a region that is unavailable (network error or 5xx) is left for home at once', async () => {
    const { db, gw } = await open()
    gw.reply(
      { throws: new TypeError('fetch failed') },
      readOk(),
      { status: 502, body: '<html>Bad Gateway</html>' },
      readOk(),
    )
    expect((await db.get(KEY, { region: 'eu', timeoutMs: 1000 })).region).toBe(0)
    expect((await db.get(KEY, { region: 'eu', timeoutMs: 1000 })).attempts).toBe(2)
    // Nothing of either budget went by, so home may wait all of it but the margin.
    expect(waits(gw)).toEqual([
      ['http://eu.test', 'any', 450],
      ['http://us.test', 'any', 900],
      ['http://eu.test', 'any', 450],
      ['http://us.test', 'any', 900],
    ])
  })

  it('a region that never answers is given up at the end of its share, and home serves in time', async () => {
    const { db, gw } = await open()
    gw.reply(
      (req) =>
        new Promise((_, reject) =>
          req.signal!.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        ),
      readOk(),
    )
    const started = Date.now()
    const pending = db.get(KEY, { region: 'eu', timeoutMs: 1000 })
    // Its share ends at 450 ms; with the 100 ms margin, no reply by 550 ms means none in time.
    await vi.advanceTimersByTimeAsync(549)
    expect(gw.kv).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(1)
    const r = await pending
    expect(r).toMatchObject({ region: 0, attempts: 2 })
    expect(Date.now() - started).toBe(550)
    expect(waits(gw)).toEqual([
      ['http://eu.test', 'any', 450],
      ['http://us.test', 'any', 350],
    ])
  })

  it('when no region answers at all: TIMEOUT at the deadline, naming each attempt', async () => {
    const { db, gw } = await open()
    const silent = (req: { signal: AbortSignal | undefined }) =>
      new Promise<never>((_, reject) =>
        req.signal!.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
      )
    gw.reply(silent, silent)
    const started = Date.now()
    const pending = rejection(db.get(KEY, { region: 'eu', timeoutMs: 1000 }))
    await vi.advanceTimersByTimeAsync(1000)
    const error = await pending
    expect(error.code).toBe('TIMEOUT')
    expect(Date.now() - started).toBe(1000)
    expect(error.details).toMatchObject({
      attempts: 2,
      tried: [
        { regionName: 'eu', waitMs: 450, code: 'TIMEOUT' },
        { regionName: 'us', waitMs: 350, code: 'TIMEOUT' },
      ],
    })
  })

  it('when home cannot cover either, throws the typed error at the deadline with what was tried', async () => {
    const { db, gw } = await open()
    gw.reply(waitsOut(notAvailable({ role: 'leader' })), waitsOut(notAvailable({ sv: { 0: 8 } })))
    const started = Date.now()
    const error = await rejection(db.get(KEY, { region: 'eu', timeoutMs: 1000 }))
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect(Date.now() - started).toBe(920)
    expect(error.details).toMatchObject({
      need: { 0: 5 },
      sv: { 0: 8 },
      attempts: 2,
      tried: [
        { region: 1, regionName: 'eu', replica: 'any', waitMs: 450, code: 'SESSION_NOT_AVAILABLE' },
        { region: 0, regionName: 'us', replica: 'any', waitMs: 430, code: 'SESSION_NOT_AVAILABLE' },
      ],
    })
    expect(error.message).toMatch(/eu any ≤450 ms → SESSION_NOT_AVAILABLE; us any ≤430 ms/)
  })

  it('a home region that cannot be reached either: NETWORK_ERROR, naming both attempts', async () => {
    const { db, gw } = await open()
    const down = new TypeError('fetch failed')
    gw.reply(waitsOut(), { throws: down })
    const error = await rejection(db.get(KEY, { region: 'eu', timeoutMs: 1000 }))
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.cause).toBe(down)
    expect(error.details?.tried).toMatchObject([
      { regionName: 'eu', code: 'SESSION_NOT_AVAILABLE' },
      { regionName: 'us', code: 'NETWORK_ERROR' },
    ])
  })
})

describe("fallback: 'none'", () => {
  it('stays in the region asked, which may wait all the budget, and throws there at the deadline', async () => {
    const { db, gw } = await open()
    gw.reply(waitsOut(notAvailable({ role: 'leader' })))
    const started = Date.now()
    const error = await rejection(db.get(KEY, { region: 'eu', timeoutMs: 1000, fallback: 'none' }))
    expect(error).toBeInstanceOf(SessionNotAvailableError)
    expect(waits(gw)).toEqual([['http://eu.test', 'any', 900]])
    expect(Date.now() - started).toBe(920)
    expect(error.details).toMatchObject({ attempts: 1, tried: [{ regionName: 'eu' }] })
  })

  it('a client-wide default that a call may override; an unavailable region is thrown as is', async () => {
    const { db, gw } = await open({ defaults: { fallback: 'none' } })
    expect(db.defaults.fallback).toBe('none')
    gw.reply(
      { throws: new TypeError('fetch failed') },
      { throws: new TypeError('fetch failed') },
      readOk(),
    )
    expect((await rejection(db.get(KEY, { region: 'eu' }))).code).toBe('NETWORK_ERROR')
    expect((await db.get(KEY, { region: 'eu', fallback: 'home' })).region).toBe(0)
    expect(gw.kv.map((r) => r.origin)).toEqual([
      'http://eu.test',
      'http://eu.test',
      'http://us.test',
    ])
  })

  it('retry: false sends one request, whatever fallback says', async () => {
    const { db, gw } = await open()
    gw.reply(waitsOut())
    await rejection(db.get(KEY, { region: 'eu', timeoutMs: 1000, retry: false, fallback: 'home' }))
    expect(waits(gw)).toEqual([['http://eu.test', 'any', 900]])
  })

  it('a bad client-wide fallback is refused at connect', async () => {
    const gw = new FakeGateway()
    const bad = await rejection(
      connect({ url: 'http://us.test', transport: gw, defaults: { fallback: 'eu' as 'home' } }),
    )
    expect(bad.code).toBe('INVALID_OPTION')
    expect(bad.message).toMatch(/'home', 'none'/)
  })
})
