import { describe, expect, it, vi } from 'vitest'
import { CausewayError, HLC_ZERO, hlcFrom, partitionOf, type SessionJSON } from '@causeway/core'
import {
  type Causeway,
  type ConnectOptions,
  Session,
  SessionNotAvailableError,
  connect,
} from '../src/index.js'
import {
  FakeGateway,
  fixtureTopology,
  hangingTransport,
  notAvailable,
  readOk,
  rejection,
  sessionJSON,
  waitsOut,
  writeOk,
} from './fake-gateway.js'

const t = (ms: number) => hlcFrom(ms, 0)

/** The first key of the form `k<n>` that lives in partition `p` of 4. */
function keyIn(p: number): string {
  for (let n = 0; n < 1000; n++) if (partitionOf(`k${n}`, 4) === p) return `k${n}`
  throw new Error('no key found')
}
const KEY = keyIn(1)
const OTHER = keyIn(2)

async function open(
  gw = new FakeGateway(),
  options: Partial<ConnectOptions> = {},
): Promise<{ db: Causeway; gw: FakeGateway }> {
  const db = await connect({ url: 'http://us.test', transport: gw, ...options })
  return { db, gw }
}

describe('connect', () => {
  it('learns the topology from the gateway and starts a fresh session', async () => {
    const { db, gw } = await open()
    expect(gw.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET http://us.test/v1/topology',
    ])
    expect(db.topology.cluster).toBe('test-cluster')
    expect(db.session.cluster).toBe('test-cluster')
    expect(db.session.touched()).toEqual([])
    expect(db.home).toEqual({ id: 0, name: 'us', url: 'http://us.test' })
    expect(db.regions.map((r) => r.url)).toEqual([
      'http://us.test',
      'http://eu.test',
      'http://us.test/ap',
    ])
    expect(db.defaults).toEqual({
      read: 'session',
      write: 'session',
      timeoutMs: 5000,
      replica: 'any',
      durability: 'leader',
      retry: true,
      fallback: 'home',
      onEpochMismatch: 'throw',
    })
  })

  it('keeps the URL it was given for its own region (a proxy the gateway does not know)', async () => {
    const db = await connect({
      url: 'https://proxy.example/causeway/',
      transport: new FakeGateway(),
    })
    expect(db.home.url).toBe('https://proxy.example/causeway')
    expect(db.regions[1]!.url).toBe('http://eu.test')
  })

  it('sends the API key and extra headers with every request', async () => {
    const { db, gw } = await open(undefined, { apiKey: 'secret', headers: { 'X-App': 'demo' } })
    gw.reply(readOk())
    await db.get(KEY)
    for (const r of gw.requests) {
      expect(r.headers.authorization).toBe('Bearer secret')
      expect(r.headers['x-app']).toBe('demo')
    }
  })

  it('restores a session from its JSON string, its object or a Session', async () => {
    const json = sessionJSON()
    for (const session of [JSON.stringify(json), json, Session.fromJSON(json)]) {
      const { db } = await open(undefined, { session })
      expect(db.session.toJSON()).toEqual(json)
    }
    // A Session object is used as is, so two clients can share one.
    const shared = Session.fromJSON(json)
    const { db } = await open(undefined, { session: shared })
    expect(db.session).toBe(shared)
  })

  it('rejects a malformed session with INVALID_SESSION and never uses it', async () => {
    const bad = [
      'not json',
      '{"v":1}',
      { ...sessionJSON(), dtR: 'yesterday' },
      { ...sessionJSON(), p: { 1: { e: 1, r: [1, 2], w: [0, 0, 0] } } },
      { ...sessionJSON(), p: { 9: { e: 1, r: [0, 0, 0], w: [0, 0, 0] } } },
      { ...sessionJSON(), v: 99 },
    ]
    for (const session of bad) {
      const gw = new FakeGateway()
      const error = await rejection(
        connect({ url: 'http://us.test', transport: gw, session: session as SessionJSON }),
      )
      expect(error.code).toBe('INVALID_SESSION')
      expect(gw.kv).toEqual([])
    }
  })

  it('rejects a session of another cluster or shape with FOREIGN_SESSION', async () => {
    const foreign = [
      sessionJSON({ cluster: 'elsewhere' }),
      sessionJSON({ partitions: 8 }),
      { ...sessionJSON({ regions: 2 }), p: {} },
    ]
    for (const session of foreign) {
      expect((await rejection(open(undefined, { session }))).code).toBe('FOREIGN_SESSION')
      expect((await rejection(open(undefined, { session: Session.fromJSON(session) }))).code).toBe(
        'FOREIGN_SESSION',
      )
    }
  })

  it('rejects bad options, bad topologies and gateway errors with typed errors', async () => {
    const cases: Array<[Promise<unknown>, string]> = [
      [connect({ url: 'localhost:7070', transport: new FakeGateway() }), 'INVALID_OPTION'],
      [connect({ url: 'ftp://x', transport: new FakeGateway() }), 'INVALID_OPTION'],
      [connect(undefined as unknown as ConnectOptions), 'INVALID_OPTION'],
      [open(undefined, { defaults: { read: 'strong' as 'session' } }), 'INVALID_LEVEL'],
      [open(undefined, { defaults: { write: 'monotonic-reads' as 'session' } }), 'INVALID_LEVEL'],
      [open(undefined, { defaults: { replica: 'nearest' as 'any' } }), 'INVALID_OPTION'],
      [open(undefined, { defaults: { timeoutMs: -1 } }), 'INVALID_OPTION'],
      [open(undefined, { region: 'mars' }), 'UNKNOWN_REGION'],
      [open(new FakeGateway({ ...fixtureTopology(), partitions: 0 })), 'INTERNAL'],
      [open(new FakeGateway({ ...fixtureTopology(), protocol: 2 })), 'INTERNAL'],
      [open(new FakeGateway({ ...fixtureTopology(), regions: [] })), 'INTERNAL'],
    ]
    for (const [promise, code] of cases) expect((await rejection(promise)).code).toBe(code)

    const unauthorized = new FakeGateway()
    unauthorized.request = async () => ({
      status: 401,
      body: { statusCode: 401, code: 'UNAUTHORIZED', message: 'no api key' },
    })
    const error = await rejection(open(unauthorized))
    expect([error.code, error.status, error.message]).toEqual(['UNAUTHORIZED', 401, 'no api key'])

    const down = new FakeGateway()
    down.request = async () => {
      throw new TypeError('fetch failed')
    }
    expect((await rejection(open(down))).code).toBe('NETWORK_ERROR')
  })

  it('makes another region home when asked', async () => {
    const { db, gw } = await open(undefined, { region: 'eu' })
    expect(db.home.id).toBe(1)
    gw.reply(writeOk({ dc: 1, region: 1 }))
    await db.put(KEY, 1)
    expect(gw.kv[0]!.origin).toBe('http://eu.test')
  })
})

describe('reads send the vector their level picks', () => {
  it.each([
    ['eventual', undefined],
    ['monotonic-reads', '0:9@1,1:3@1'],
    ['read-your-writes', '0:7@1,2:4@1'],
    ['session', '0:9@1,1:3@1,2:4@1'],
  ] as const)('%s sends %s', async (read, header) => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply(readOk())
    await db.get(KEY, { read })
    expect(gw.kv[0]!.headers['causeway-after']).toBe(header)
    expect(gw.kv[0]!.query.level).toBe(read)
  })

  it('sends nothing for a partition the session never touched', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply(readOk())
    await db.get(OTHER)
    expect(gw.kv[0]!.headers).not.toHaveProperty('causeway-after')
  })

  it('uses the client-wide default level unless the call names one', async () => {
    const { db, gw } = await open(undefined, {
      session: sessionJSON(),
      defaults: { read: 'read-your-writes' },
    })
    gw.reply(readOk(), readOk())
    await db.get(KEY)
    await db.get(KEY, { read: 'monotonic-reads' })
    expect(gw.kv.map((r) => r.headers['causeway-after'])).toEqual(['0:7@1,2:4@1', '0:9@1,1:3@1'])
  })

  it('sends replica, timeout and a percent-encoded key', async () => {
    const { db, gw } = await open()
    const key = 'user/1 {tag}?&#é'
    gw.reply(readOk())
    await db.get(key, { replica: 'follower', timeoutMs: 1000, retry: false })
    const req = gw.kv[0]!
    expect(req.key).toBe(key)
    expect(req.url).toContain('/v1/kv/' + encodeURIComponent(key) + '?')
    expect(req.query.replica).toBe('follower')
    // Alone (no retry), the attempt may wait all of the budget but the reply reserve.
    expect(Number(req.query.timeoutMs)).toBeGreaterThan(850)
    expect(Number(req.query.timeoutMs)).toBeLessThanOrEqual(900)
  })
})

describe('writes send the dependency time their level picks', () => {
  it.each([
    ['eventual', t(120), t(100), undefined],
    ['monotonic-writes', t(120), t(100), t(100)],
    ['writes-follow-reads', t(120), t(100), t(120)],
    ['session', t(120), t(100), t(120)],
    ['session', t(100), t(130), t(130)],
  ] as const)('%s (dtR %s, dtW %s) sends %s', async (write, dtR, dtW, header) => {
    const { db, gw } = await open(undefined, { session: sessionJSON({ dtR, dtW }) })
    gw.reply(writeOk(), writeOk())
    await db.put(KEY, { name: 'Ada' }, { write })
    await db.delete(KEY, { write, durability: 'majority' })
    const [put, del] = gw.kv
    expect(put!.method).toBe('PUT')
    expect(put!.body).toEqual({ value: { name: 'Ada' } })
    expect(put!.headers['content-type']).toBe('application/json')
    expect(put!.query).toEqual({ level: write, durability: 'leader' })
    expect(del!.method).toBe('DELETE')
    expect(del!.body).toBeUndefined()
    expect(del!.query).toEqual({ level: write, durability: 'majority' })
    // The first write's reply (ts 1 ms) is older than dtW, so both send the same dt.
    expect(put!.headers['causeway-dt']).toBe(header)
    expect(del!.headers['causeway-dt']).toBe(header)
  })

  it('a fresh session sends no dependency', async () => {
    const { db, gw } = await open()
    gw.reply(writeOk())
    await db.put(KEY, null)
    expect(gw.kv[0]!.headers).not.toHaveProperty('causeway-dt')
    expect(gw.kv[0]!.body).toEqual({ value: null })
  })
})

describe('replies update the session (NuKV Algorithm 1)', () => {
  it('a read raises hrm[dc][p] and dtR; a write raises hwm[d][p] and dtW', async () => {
    const { db, gw } = await open()
    const p = partitionOf(KEY, 4)
    expect(db.partitionOf(KEY)).toBe(p)
    gw.reply(
      readOk({ dc: 1, idx: 5, ts: t(500), region: 1 }),
      writeOk({ dc: 0, idx: 8, ts: t(600) }),
      readOk({ dc: 1, idx: 2, ts: t(400) }), // older: changes nothing
      writeOk({ dc: 2, idx: 3, ts: t(550), region: 2 }),
    )
    const r = await db.get(KEY)
    expect(r).toEqual({
      found: true,
      value: 'v',
      ts: t(500),
      dc: 1,
      idx: 5,
      epoch: 1,
      region: 1,
      replica: 0,
      waitedMs: 0,
      attempts: 1,
      source: 'remote',
      pending: false,
    })
    expect(db.session.row(p)).toMatchObject({ epoch: 1, hrm: [0, 5, 0], hwm: [0, 0, 0] })
    expect(db.session.dtR).toBe(t(500))

    expect(await db.put(KEY, 1)).toMatchObject({
      pending: false,
      ts: t(600),
      dc: 0,
      idx: 8,
      epoch: 1,
      region: 0,
    })
    expect(db.session.row(p)).toMatchObject({ epoch: 1, hrm: [0, 5, 0], hwm: [8, 0, 0] })
    expect(db.session.dtW).toBe(t(600))

    await db.get(KEY)
    await db.delete(KEY, { region: 'ap' })
    expect(db.session.row(p)).toMatchObject({ epoch: 1, hrm: [0, 5, 0], hwm: [8, 0, 3] })
    expect(db.session.dtR).toBe(t(500))
    expect(db.session.dtW).toBe(t(600))
    expect(db.session.touched()).toEqual([p])
  })

  it('a key never written resolves found: false with no value', async () => {
    const { db, gw } = await open()
    gw.reply({
      status: 200,
      body: { found: false, epoch: 1, region: 0, replica: 2, waitedMs: 3 },
    })
    const r = await db.get(KEY)
    expect(r).toMatchObject({ found: false, value: undefined, ts: undefined, waitedMs: 3 })
    expect(db.session.dtR).toBe(HLC_ZERO)
  })

  it('a deleted key (tombstone) still moves the session forward', async () => {
    const { db, gw } = await open()
    gw.reply(readOk({ found: false, value: undefined, dc: 2, idx: 6, ts: t(700) }))
    const r = await db.get(KEY)
    expect(r.found).toBe(false)
    expect(r.value).toBeUndefined()
    expect(db.session.row(partitionOf(KEY, 4))!.hrm).toEqual([0, 0, 6])
    expect(db.session.dtR).toBe(t(700))
  })

  it('a malformed reply is refused with INTERNAL and leaves the session alone', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    const before = JSON.stringify(db.session)
    gw.reply(
      readOk({ dc: 7 }), // no such region
      readOk({ ts: 'soon' }),
      { status: 200, body: 'not json' },
      writeOk({ idx: 0 }),
      writeOk({ epoch: undefined }),
    )
    for (let i = 0; i < 3; i++) expect((await rejection(db.get(KEY))).code).toBe('INTERNAL')
    for (let i = 0; i < 2; i++) expect((await rejection(db.put(KEY, 1))).code).toBe('INTERNAL')
    expect(JSON.stringify(db.session)).toBe(before)
  })

  it('notifies session listeners after each reply', async () => {
    const { db, gw } = await open()
    const seen: string[] = []
    const off = db.onSessionChange((s) => seen.push(s.dtW))
    gw.reply(writeOk({ ts: t(1) }), writeOk({ ts: t(2) }))
    await db.put(KEY, 1)
    off()
    await db.put(KEY, 2)
    expect(seen).toEqual([t(1)])
  })
})

describe('region routing', () => {
  it.each([
    ['eu', 'http://eu.test'],
    [1, 'http://eu.test'],
    ['ap', 'http://us.test'],
    [0, 'http://us.test'],
  ] as const)('region %s goes to %s', async (region, origin) => {
    const { db, gw } = await open()
    gw.reply(readOk(), writeOk(), writeOk())
    await db.get(KEY, { region })
    await db.put(KEY, 1, { region })
    await db.delete(KEY, { region })
    for (const r of gw.kv) expect(r.origin).toBe(origin)
    if (region === 'ap') for (const r of gw.kv) expect(r.path.startsWith('/ap/v1/kv/')).toBe(true)
  })

  it('an unknown region is refused before anything is sent', async () => {
    const { db, gw } = await open()
    for (const region of ['mars', 3, -1, 1.5]) {
      expect((await rejection(db.get(KEY, { region }))).code).toBe('UNKNOWN_REGION')
      expect((await rejection(db.put(KEY, 1, { region }))).code).toBe('UNKNOWN_REGION')
    }
    expect(gw.kv).toEqual([])
  })
})

describe('input is checked before anything is sent', () => {
  it('keys, levels, options and values', async () => {
    const { db, gw } = await open()
    const cases: Array<[Promise<unknown>, string]> = [
      [db.get(''), 'INVALID_KEY'],
      [db.get(42 as unknown as string), 'INVALID_KEY'],
      [db.get('\ud800'), 'INVALID_KEY'],
      [db.get('é'.repeat(257)), 'KEY_TOO_LARGE'],
      [db.put('', 1), 'INVALID_KEY'],
      [db.delete('x'.repeat(513)), 'KEY_TOO_LARGE'],
      [db.get(KEY, { read: 'strong' as 'session' }), 'INVALID_LEVEL'],
      [db.get(KEY, { read: 'monotonic-writes' as 'session' }), 'INVALID_LEVEL'],
      [db.put(KEY, 1, { write: 'read-your-writes' as 'session' }), 'INVALID_LEVEL'],
      [db.get(KEY, { replica: 'primary' as 'leader' }), 'INVALID_OPTION'],
      [db.get(KEY, { timeoutMs: 0 }), 'INVALID_OPTION'],
      [db.get(KEY, { timeoutMs: 60_001 }), 'INVALID_OPTION'],
      [db.get(KEY, { timeoutMs: 1.5 }), 'INVALID_OPTION'],
      [db.get(KEY, { retry: 'yes' as unknown as boolean }), 'INVALID_OPTION'],
      [db.get(KEY, { fallback: 'eu' as 'home' }), 'INVALID_OPTION'],
      [db.put(KEY, 1, { durability: 'all' as 'majority' }), 'INVALID_OPTION'],
      [db.put(KEY, undefined), 'INVALID_VALUE'],
      [db.put(KEY, () => 1), 'INVALID_VALUE'],
      [db.put(KEY, 10n), 'INVALID_VALUE'],
      [db.put(KEY, { toJSON: () => undefined }), 'INVALID_VALUE'],
      [db.put(KEY, 'x'.repeat(1024 * 1024)), 'VALUE_TOO_LARGE'],
      [db.put(KEY, 'é'.repeat(600 * 1024)), 'VALUE_TOO_LARGE'],
    ]
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    cases.push([db.put(KEY, cyclic), 'INVALID_VALUE'])
    for (const [promise, code] of cases) expect((await rejection(promise)).code).toBe(code)
    expect(gw.kv).toEqual([])
    // Just under the limit is fine: 1 MiB of JSON including the quotes.
    gw.reply(writeOk())
    await db.put(KEY, 'x'.repeat(1024 * 1024 - 2))
    expect(gw.kv).toHaveLength(1)
  })
})

describe('retries on SESSION_NOT_AVAILABLE', () => {
  it('tries the leader of the region, then the home region, then throws; the vector never changes', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      gw.reply(
        waitsOut(notAvailable({ sv: { 0: 1 } })),
        (req) => {
          // The session moves on while the read is retried (another call's reply): this read
          // still sends the vector it started with, neither more nor less.
          db.session.observeWrite(1, { dc: 0, idx: 50, ts: t(900), epoch: 1 })
          expect(req.headers['causeway-after']).toBe('0:9@1,1:3@1,2:4@1')
          return waitsOut(notAvailable({ sv: { 0: 2 } }))(req)
        },
        waitsOut(notAvailable({ sv: { 0: 4 } })),
      )
      const error = await rejection(db.get(KEY, { region: 'eu', replica: 'follower' }))
      expect(error).toBeInstanceOf(SessionNotAvailableError)
      expect(error.code).toBe('SESSION_NOT_AVAILABLE')
      expect(error.status).toBe(503)
      expect(error.details).toMatchObject({ need: { 0: 5 }, sv: { 0: 4 }, attempts: 3 })
      expect(gw.kv.map((r) => [r.origin, r.query.replica])).toEqual([
        ['http://eu.test', 'follower'],
        ['http://eu.test', 'leader'],
        ['http://us.test', 'any'],
      ])
      const vectors = gw.kv.map((r) => r.headers['causeway-after'])
      expect(vectors).toEqual(['0:9@1,1:3@1,2:4@1', '0:9@1,1:3@1,2:4@1', '0:9@1,1:3@1,2:4@1'])
      // Every attempt reads the same key at the same level.
      expect(new Set(gw.kv.map((r) => `${r.key} ${r.query.level}`))).toEqual(
        new Set([`${KEY} session`]),
      )
    } finally {
      vi.useRealTimers()
    }
  })

  it('splits the deadline: half to the region asked, the rest to the home region', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      gw.reply(waitsOut(), waitsOut())
      const started = Date.now()
      await rejection(db.get(KEY, { region: 'eu', timeoutMs: 4000 }))
      // Budget 4000 less a 200 ms reply reserve: 3800 / 2 in eu, then what is left of 3800.
      expect(gw.kv.map((r) => [r.origin, Number(r.query.timeoutMs)])).toEqual([
        ['http://eu.test', 1900],
        ['http://us.test', 1880],
      ])
      expect(Date.now() - started).toBeLessThanOrEqual(4000)
    } finally {
      vi.useRealTimers()
    }
  })

  it('skips a fallback that would have no time left to wait', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      // The replica waited out the whole budget but the reserve (a gateway that ignores timeoutMs).
      gw.reply((req) => {
        vi.advanceTimersByTime(3800)
        return notAvailable({ sv: { 0: 4 }, got: req.query.timeoutMs })
      })
      const error = await rejection(db.get(KEY, { region: 'eu', timeoutMs: 4000 }))
      expect(error).toBeInstanceOf(SessionNotAvailableError)
      expect(error.code).toBe('SESSION_NOT_AVAILABLE')
      expect(error.details).toMatchObject({ sv: { 0: 4 }, attempts: 1 })
      expect(gw.kv).toHaveLength(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it('in the home region: a follower refused at once leaves the leader the rest, then throws', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      gw.reply(notAvailable({ role: 'follower' }), waitsOut(notAvailable({ role: 'leader' })))
      const error = await rejection(db.get(KEY))
      expect(error).toBeInstanceOf(SessionNotAvailableError)
      expect(error.code).toBe('SESSION_NOT_AVAILABLE')
      expect(gw.kv.map((r) => [r.origin, r.query.replica, r.query.timeoutMs])).toEqual([
        ['http://us.test', 'any', '4800'],
        ['http://us.test', 'leader', '4800'],
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('does not ask a leader again once it waited out its share', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      gw.reply(waitsOut(), waitsOut(), waitsOut(notAvailable({ role: 'leader' })), waitsOut())
      await rejection(db.get(KEY, { region: 'eu', replica: 'leader' }))
      await rejection(db.get(KEY, { region: 'eu' }))
      expect(gw.kv.map((r) => [r.origin, r.query.replica])).toEqual([
        ['http://eu.test', 'leader'],
        ['http://us.test', 'any'],
        ['http://eu.test', 'any'],
        ['http://us.test', 'any'],
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('does not retry with retry: false', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply(notAvailable())
    await rejection(db.get(KEY, { region: 'eu', retry: false }))
    expect(gw.kv).toHaveLength(1)
    expect(Number(gw.kv[0]!.query.timeoutMs)).toBeGreaterThan(4700)
  })

  it('resolves from a fallback and records its reply', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply(notAvailable(), readOk({ dc: 1, idx: 11, ts: t(800), region: 1, replica: 0 }))
    const r = await db.get(KEY, { region: 'eu' })
    expect(r.attempts).toBe(2)
    expect(r.region).toBe(1)
    expect(db.session.row(1)!.hrm).toEqual([9, 11, 0])
  })

  it('other errors are not retried', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply({
      status: 409,
      body: { statusCode: 409, code: 'EPOCH_MISMATCH', message: 'partition 1 is at epoch 2' },
    })
    const error = await rejection(db.get(KEY, { region: 'eu' }))
    expect(error.code).toBe('EPOCH_MISMATCH')
    expect(gw.kv).toHaveLength(1)
  })

  it('a read whose region is unreachable falls back to the home region', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    gw.reply({ throws: new TypeError('fetch failed') }, readOk())
    const r = await db.get(KEY, { region: 'eu' })
    expect(r.attempts).toBe(2)
    expect(gw.kv.map((r) => [r.origin, r.headers['causeway-after']])).toEqual([
      ['http://eu.test', '0:9@1,1:3@1,2:4@1'],
      ['http://us.test', '0:9@1,1:3@1,2:4@1'],
    ])
  })

  it('a region whose gateway is shutting down falls back home; at home the error is thrown as is', async () => {
    const { db, gw } = await open(undefined, { session: sessionJSON() })
    const shuttingDown = {
      status: 503,
      body: { statusCode: 503, code: 'SHUTTING_DOWN', message: 'bye' },
    }
    gw.reply(shuttingDown, readOk(), shuttingDown)
    expect((await db.get(KEY, { region: 'eu' })).attempts).toBe(2)
    expect(gw.kv.map((r) => [r.origin, r.query.replica])).toEqual([
      ['http://eu.test', 'any'],
      ['http://us.test', 'any'],
    ])
    const error = await rejection(db.get(KEY))
    expect([error.code, error.message]).toEqual(['SHUTTING_DOWN', 'bye'])
    expect(gw.kv).toHaveLength(3)
  })

  it('an unreachable home region is a NETWORK_ERROR', async () => {
    const { db, gw } = await open()
    gw.reply({ throws: new TypeError('fetch failed') })
    const error = await rejection(db.get(KEY))
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.cause).toBeInstanceOf(TypeError)
    expect(gw.kv).toHaveLength(1)
  })
})

describe('writes are never retried', () => {
  it('a network error is a NETWORK_ERROR after one request, saying the write may have applied', async () => {
    const { db, gw } = await open()
    gw.reply({ throws: new TypeError('socket hang up') })
    const error = await rejection(db.put(KEY, 1, { region: 'eu' }))
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.message).toMatch(/may or may not have been applied/)
    expect(gw.kv).toHaveLength(1)
    expect(db.session.touched()).toEqual([])
  })

  it('a gateway error is thrown as is', async () => {
    const { db, gw } = await open()
    gw.reply({
      status: 400,
      body: { statusCode: 400, code: 'CLOCK_SKEW_EXCEEDED', message: 'dt is 40 s ahead' },
    })
    const error = await rejection(db.put(KEY, 1))
    expect([error.code, error.status]).toEqual(['CLOCK_SKEW_EXCEEDED', 400])
    expect(gw.kv).toHaveLength(1)
  })
})

describe('deadlines, aborts and close', () => {
  it('a call that gets no reply rejects with TIMEOUT at its deadline', async () => {
    const transport = hangingTransport()
    const db = await connect({ url: 'http://us.test', transport })
    const started = Date.now()
    const error = await rejection(db.get(KEY, { timeoutMs: 80 }))
    expect(error.code).toBe('TIMEOUT')
    expect(Date.now() - started).toBeLessThan(1000)
    const write = await rejection(db.put(KEY, 1, { timeoutMs: 50 }))
    expect(write.code).toBe('TIMEOUT')
    expect(write.message).toMatch(/may or may not have been applied/)
    expect(transport.requests).toHaveLength(2)
    expect(transport.requests.every((r) => r.signal?.aborted)).toBe(true)
  })

  it("the caller's signal aborts a call with the signal's reason", async () => {
    const db = await connect({ url: 'http://us.test', transport: hangingTransport() })
    const controller = new AbortController()
    const pending = db.get(KEY, { signal: controller.signal })
    controller.abort(new Error('user left'))
    await expect(pending).rejects.toThrow('user left')
    const aborted = AbortSignal.abort(new Error('already'))
    await expect(db.put(KEY, 1, { signal: aborted })).rejects.toThrow('already')
  })

  it('close() rejects calls in flight and later calls, and closes only its own transport', async () => {
    const transport = hangingTransport()
    const db = await connect({ url: 'http://us.test', transport })
    const pending = db.get(KEY)
    await db.close()
    expect((await rejection(pending)).code).toBe('SHUTTING_DOWN')
    expect((await rejection(db.get(KEY))).code).toBe('SHUTTING_DOWN')
    expect(db.closed).toBe(true)

    const gw = new FakeGateway()
    const db2 = await connect({ url: 'http://us.test', transport: gw })
    await db2.close()
    expect(gw.closed).toBe(0)
  })
})

describe('typed errors', () => {
  it('gateway errors keep their code, status and details; instanceof works across copies', async () => {
    const { db, gw } = await open()
    gw.reply({
      status: 413,
      body: { statusCode: 413, code: 'VALUE_TOO_LARGE', message: 'too big', details: { limit: 9 } },
    })
    const error = await rejection(db.put(KEY, 1))
    expect(error).toBeInstanceOf(Error)
    expect([error.code, error.status, error.details]).toEqual([
      'VALUE_TOO_LARGE',
      413,
      { limit: 9 },
    ])
    // What a second bundled copy of the SDK would throw: a different class with the same brand.
    const foreign = Object.assign(new Error('x'), { [Symbol.for('causeway.error')]: true })
    expect(foreign).toBeInstanceOf(CausewayError)
    expect(new Error('plain')).not.toBeInstanceOf(CausewayError)
    // A subclass matches only its own code.
    expect(error).not.toBeInstanceOf(SessionNotAvailableError)
    expect(Object.assign(foreign, { code: 'SESSION_NOT_AVAILABLE' })).toBeInstanceOf(
      SessionNotAvailableError,
    )
  })

  it('an error reply that is not Causeway JSON becomes INTERNAL with the status in its message', async () => {
    const { db, gw } = await open()
    gw.reply({ status: 502, body: undefined })
    const error = await rejection(db.get(KEY))
    expect(error.code).toBe('INTERNAL')
    expect(error.message).toMatch(/502/)
  })
})

describe('sharing a session', () => {
  it('merge carries read-your-writes from one client to another', async () => {
    const a = await open()
    const b = await open()
    a.gw.reply(writeOk({ dc: 0, idx: 42, ts: t(900) }))
    await a.db.put(KEY, 'from a')
    b.db.session.merge(JSON.parse(JSON.stringify(a.db.session)) as SessionJSON)
    b.gw.reply(readOk(), writeOk())
    await b.db.get(KEY, { read: 'read-your-writes' })
    await b.db.put(OTHER, 1, { write: 'monotonic-writes' })
    expect(b.gw.kv[0]!.headers['causeway-after']).toBe('0:42@1')
    expect(b.gw.kv[1]!.headers['causeway-dt']).toBe(t(900))
  })

  it('a saved session restored into a second client continues where the first left off', async () => {
    const a = await open()
    a.gw.reply(readOk({ dc: 1, idx: 17, ts: t(300) }))
    await a.db.get(KEY)
    const saved = JSON.stringify(a.db.session)
    const b = await open(undefined, { session: saved })
    b.gw.reply(readOk({ dc: 1, idx: 17, ts: t(300) }))
    await b.db.get(KEY, { read: 'monotonic-reads' })
    expect(b.gw.kv[0]!.headers['causeway-after']).toBe('1:17@1')
  })
})
