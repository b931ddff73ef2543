import { afterEach, describe, expect, it } from 'vitest'
import { readFinalState } from '../src/index.js'
import { FakeCluster } from './fake-cluster.js'

let cluster: FakeCluster | undefined
afterEach(() => cluster?.close())

describe('readFinalState', () => {
  it('waits until every region holds the newest acknowledged version', async () => {
    cluster = new FakeCluster({ regions: 3, shipDelayMs: 80 })
    const db = await cluster.connect({ url: 'x' })
    const w = await db.put('k', 1, { write: 'session', region: 2 })
    const state = await readFinalState({
      db,
      keys: ['k', 'untouched'],
      regions: 3,
      atLeast: new Map([['k', { ts: w.ts, dc: w.dc }]]),
      intervalMs: 10,
    })
    const v = { ts: w.ts, dc: 2 }
    expect(state).toMatchObject({
      converged: true,
      final: { k: [v, v, v], untouched: [undefined, undefined, undefined] },
    })
    // Regions 0 and 1 agreed (on nothing) at once; the floor made it wait for shipping.
    expect(state.elapsedMs).toBeGreaterThanOrEqual(70)
    expect(state.polls).toBeGreaterThan(2)
  })

  it('gives up after its timeout and returns what it last read', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 10 })
    cluster.partitioned = true
    const db = await cluster.connect({ url: 'x' })
    const w = await db.put('k', 1, { write: 'session', region: 0 })
    const state = await readFinalState({
      db,
      keys: ['k'],
      regions: 2,
      timeoutMs: 150,
      intervalMs: 20,
    })
    expect(state.converged).toBe(false)
    expect(state.final).toEqual({ k: [{ ts: w.ts, dc: 0 }, undefined] })
    expect(state.elapsedMs).toBeLessThan(400)
  })

  it('does not count a poll whose reads failed, and keeps the last winner read', async () => {
    cluster = new FakeCluster({ regions: 2, shipDelayMs: 'sync' })
    const db = await cluster.connect({ url: 'x' })
    const w = await db.put('k', 1, { write: 'session', region: 1 })
    const first = await readFinalState({ db, keys: ['k'], regions: 2, intervalMs: 5 })
    expect(first).toMatchObject({ converged: true, polls: 2 })
    cluster.failReads = 'TIMEOUT'
    const failing = await readFinalState({
      db,
      keys: ['k'],
      regions: 2,
      timeoutMs: 60,
      intervalMs: 10,
    })
    expect(failing.converged).toBe(false)
    expect(failing.final).toEqual({ k: [undefined, undefined] })
    expect(first.final).toEqual({
      k: [
        { ts: w.ts, dc: 1 },
        { ts: w.ts, dc: 1 },
      ],
    })
  })
})
