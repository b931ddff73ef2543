import { afterEach, describe, expect, it } from 'vitest'
import { checkHistory, formatReport, runWorkload, type Operation } from '../src/index.js'
import { FakeCluster } from './fake-cluster.js'

let cluster: FakeCluster | undefined
afterEach(() => cluster?.close())

const perClient = (ops: readonly Operation[]) => {
  const by = new Map<string, string[]>()
  for (const o of ops)
    by.set(String(o.client), [
      ...(by.get(String(o.client)) ?? []),
      `${o.op} ${o.key} ${o.region} ${o.level}`,
    ])
  return by
}

describe('runWorkload', () => {
  it('runs every client for its calls, on its own connection, and reads the final state', async () => {
    cluster = new FakeCluster({ regions: 3, shipDelayMs: 'sync' })
    const c = cluster
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: ['http://a', 'http://b'],
      regions: 3,
      clients: 5,
      keys: 3,
      opsPerClient: 20,
      durationMs: 10_000,
      level: { read: ['session', 'eventual'], write: 'monotonic-writes' },
      seed: 42,
    })
    expect(c.connects).toBe(6) // one per client, one for the final reads
    expect(result.history.operations).toHaveLength(100)
    expect(result.keys).toHaveLength(3)
    expect(new Set(result.history.operations.map((o) => o.key))).toEqual(new Set(result.keys))
    expect(new Set(result.history.operations.map((o) => o.op))).toEqual(
      new Set(['get', 'put', 'delete']),
    )
    const levels = new Set(result.history.operations.map((o) => o.level))
    expect(levels).toEqual(new Set(['session', 'eventual', 'monotonic-writes']))
    expect(result).toMatchObject({ converged: true, failures: {}, seed: 42 })
    expect(Object.keys(result.history.final!)).toEqual(result.keys)
    // A single linearizable copy keeps every guarantee.
    const report = checkHistory(result.history, { asIfSession: true })
    expect(report.violations, formatReport(report)).toEqual([])
    expect(report.results['monotonic-reads']!.crossRegion).toBeGreaterThan(0)
  })

  it('switches regions as often as asked, starting from each client home region', async () => {
    cluster = new FakeCluster({ regions: 3, shipDelayMs: 'sync' })
    const c = cluster
    const run = (switchRegionProbability: number) =>
      runWorkload({
        connect: (o) => c.connect(o),
        url: 'x',
        regions: 3,
        clients: 3,
        opsPerClient: 15,
        switchRegionProbability,
        seed: 7,
      })
    const sticky = await run(0)
    for (const [client, ops] of perClient(sticky.history.operations))
      expect(new Set(ops.map((o) => o.split(' ')[2]))).toEqual(new Set([client.slice(1)]))
    const always = await run(1)
    for (const ops of perClient(always.history.operations).values()) {
      const regions = ops.map((o) => o.split(' ')[2])
      expect(regions.every((r, i) => i === 0 || r !== regions[i - 1])).toBe(true)
    }
  })

  it('makes the same choices from the same seed', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync' })
    const c = cluster
    const run = (seed: number) =>
      runWorkload({
        connect: (o) => c.connect(o),
        url: 'x',
        regions: 2,
        clients: 3,
        keys: ['a', 'b'],
        opsPerClient: 10,
        seed,
        level: { read: ['session', 'eventual'] },
      })
    const [a, b, other] = await Promise.all([run(1), run(1), run(2)])
    expect(perClient(a.history.operations)).toEqual(perClient(b.history.operations))
    expect(perClient(a.history.operations)).not.toEqual(perClient(other.history.operations))
  })

  it('stops starting calls after durationMs', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync', callMs: 20 })
    const c = cluster
    const t0 = performance.now()
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 2,
      opsPerClient: 1000,
      durationMs: 150,
    })
    expect(result.elapsedMs.calls).toBeLessThan(300)
    expect(performance.now() - t0).toBeLessThan(1000)
    expect(result.history.operations.length).toBeGreaterThan(4)
    expect(result.history.operations.length).toBeLessThan(40)
  })

  it('asks each write for a durability from the list and records it', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync' })
    const c = cluster
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 2,
      opsPerClient: 40,
      mix: { get: 0, put: 1, delete: 1 },
      durability: ['majority', 'leader'],
      seed: 5,
    })
    const asked = result.history.operations.map((o) => (o.op === 'get' ? 'get' : o.durability))
    expect(new Set(asked)).toEqual(new Set(['majority', 'leader']))
    const none = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 1,
      opsPerClient: 5,
      mix: { get: 0, put: 1, delete: 0 },
    })
    expect(none.history.operations.every((o) => !('durability' in o))).toBe(true)
  })

  it('stops starting calls once its signal aborts', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync', callMs: 20 })
    const c = cluster
    const end = new AbortController()
    setTimeout(() => end.abort(), 150)
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 2,
      opsPerClient: 1000,
      durationMs: 60_000,
      signal: end.signal,
    })
    // Without the signal it would go on for a minute (or 2,000 calls of 20 ms each).
    expect(result.elapsedMs.calls).toBeLessThan(5_000)
    expect(result.history.operations.length).toBeGreaterThan(4)
    expect(result.history.operations.length).toBeLessThan(250)
  })

  it('pauses a client after a failed call when asked', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync' })
    const c = cluster
    c.failReads = 'NETWORK_ERROR'
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 1,
      opsPerClient: 5,
      mix: { get: 1, put: 0, delete: 0 },
      pauseAfterFailureMs: 80,
      convergence: { timeoutMs: 50 },
    })
    // Five calls that fail at once, each followed by its pause (a busy machine only adds time).
    expect(result.failures.NETWORK_ERROR).toBe(5)
    expect(result.elapsedMs.calls).toBeGreaterThanOrEqual(5 * 80 - 10)
  })

  it('records failed calls and goes on, but throws a failed connect', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync' })
    const c = cluster
    c.failReads = 'SESSION_NOT_AVAILABLE'
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 2,
      opsPerClient: 20,
      mix: { get: 1, put: 1, delete: 0 },
      convergence: { timeoutMs: 50 },
    })
    expect(result.history.operations).toHaveLength(40)
    expect(result.failures.SESSION_NOT_AVAILABLE).toBe(
      result.history.operations.filter((o) => o.op === 'get').length,
    )
    expect(result.converged).toBe(false)
    await expect(
      runWorkload({
        connect: async () => {
          throw new Error('refused')
        },
        url: 'x',
        regions: 2,
      }),
    ).rejects.toThrow('refused')
  })

  it('lets the checker catch a cluster that ignores levels (negative control on a fake)', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 40, clockOffsetsMs: [0, -300] })
    const c = cluster
    const result = await runWorkload({
      connect: (o) => c.connect(o),
      url: 'x',
      regions: 2,
      clients: 4,
      keys: 2,
      opsPerClient: 60,
      switchRegionProbability: 0.5,
      level: { read: 'eventual', write: 'eventual' },
      seed: 3,
    })
    expect(result.converged).toBe(true)
    expect(checkHistory(result.history).violations).toEqual([])
    const report = checkHistory(result.history, { asIfSession: true })
    for (const check of [
      'monotonic-reads',
      'read-your-writes',
      'monotonic-writes',
      'writes-follow-reads',
    ] as const)
      expect(report.results[check]!.violations.length, formatReport(report)).toBeGreaterThan(0)
    expect(report.results.convergence!.violations).toEqual([])
  })
})
