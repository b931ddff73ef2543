/** The `dvv` suite's pieces: the Riak-style VV baseline, its store, the workload's key skew. */
import { DvvSet } from '@causeway/core'
import { describe, expect, it, vi } from 'vitest'
import { BaselineCluster, BaselineRegion } from '../src/dvv/baseline-store.js'
import {
  clientIdPerValueVvStore,
  clientIdVvStore,
  dvvSetStore,
  scenarioOne,
  scenarioTwo,
  serverIdVvStore,
} from '../src/dvv/interleaved.js'
import {
  EMPTY_OBJECT,
  type Vv,
  decodeVv,
  descends,
  encodeVv,
  mergeObjects,
  mergeVv,
  prune,
  writeObject,
} from '../src/dvv/vv-clock.js'
import { latencyStats, median, seeded, skewedIndex } from '../src/dvv/workload.js'
import { clockGrowth } from '../src/suites/dvv.js'

const T = 1_700_000_000_000

describe('client-id version vectors (the baseline)', () => {
  it('compare and merge entry by entry', () => {
    const a: Vv = [
      [1, 2, T],
      [3, 1, T],
    ]
    const b: Vv = [
      [1, 3, T + 5],
      [2, 1, T],
      [3, 1, T],
    ]
    expect(descends(b, a)).toBe(true)
    expect(descends(a, b)).toBe(false)
    expect(descends(a, a)).toBe(true)
    expect(descends(a, [])).toBe(true)
    expect(mergeVv(a, [[2, 4, T + 9]])).toEqual([
      [1, 2, T],
      [2, 4, T + 9],
      [3, 1, T],
    ])
  })

  it('prune as riak_core does: never below small or young entries, down to big otherwise', () => {
    const clock = (n: number, at: (i: number) => number): Vv =>
      Array.from({ length: n }, (_, i) => [i, 1, at(i)] as const)
    // 60 entries, all older than 20 s: pruned to 50, the oldest first.
    const old = prune(
      clock(60, (i) => T + i * 1000),
      T + 120_000,
    )
    expect(old).toHaveLength(50)
    expect(old.map((e) => e[0])).toEqual(Array.from({ length: 50 }, (_, i) => i + 10))
    // Young entries are never pruned, however many.
    expect(
      prune(
        clock(80, () => T),
        T + 10_000,
      ),
    ).toHaveLength(80)
    // At most `small` entries: untouched.
    expect(
      prune(
        clock(20, () => T),
        T + 10 ** 9,
      ),
    ).toHaveLength(20)
    // Older than a day: pruned down to `small`.
    expect(
      prune(
        clock(40, () => T),
        T + 2 * 86_400_000,
      ),
    ).toHaveLength(20)
  })

  it('encode with a varint triple per entry, timestamps in seconds', () => {
    const clock: Vv = [
      [0, 1, T],
      [300, 70_000, T + 2000],
    ]
    const bytes = encodeVv(clock)
    expect(decodeVv(bytes)).toEqual(clock)
    expect(bytes.length).toBe(1 + (1 + 1 + 5) + (2 + 3 + 5))
  })

  it('keep one clock per object, so a write that missed a sibling supersedes none of them', () => {
    const v1 = writeObject(EMPTY_OBJECT, 'v1', [], 1, 1, T)
    const seen = v1.clock
    const v2 = writeObject(v1, 'v2', [], 2, 1, T) // blind: concurrent
    expect(v2.values).toEqual(['v1', 'v2'])
    // Client 3 saw v1 only: with per-object clocks, v1 cannot be told apart and stays.
    const v3 = writeObject(v2, 'v3', seen, 3, 1, T)
    expect(v3.values).toEqual(['v1', 'v2', 'v3'])
    // A write that saw everything replaces everything.
    expect(writeObject(v3, 'v4', v3.clock, 1, 2, T).values).toEqual(['v4'])
    // Replicas merge whole objects.
    expect(mergeObjects(v3, v2)).toBe(v3)
    expect(mergeObjects(v2, writeObject(v1, 'x', v1.clock, 9, 1, T)).values).toEqual([
      'v1',
      'v2',
      'x',
    ])
  })
})

describe('the 101 interleaved writes', () => {
  it('leave 2 siblings with exact causality and every write with Riak’s merged clocks', async () => {
    for (const play of [scenarioOne, scenarioTwo]) {
      expect(await play(serverIdVvStore())).toBe(101)
      expect(await play(clientIdVvStore())).toBe(101)
      expect(await play(clientIdPerValueVvStore())).toBe(2)
      expect(await play(dvvSetStore())).toBe(2)
    }
  })
})

describe('the baseline store', () => {
  it('converges every region on the same values in both modes', async () => {
    for (const mode of ['vv', 'dvv'] as const) {
      const cluster = new BaselineCluster(3, mode, 1)
      const [r0, r1, r2] = cluster.regions as [BaselineRegion, BaselineRegion, BaselineRegion]
      cluster.write(0, 'k', { value: '"a"', context: undefined, client: 1, seq: 1 })
      cluster.write(1, 'k', { value: '"b"', context: undefined, client: 2, seq: 1 })
      await vi.waitFor(() => expect([...r2.read('k').values].sort(), mode).toEqual(['"a"', '"b"']))
      const both = r2.read('k')
      cluster.write(2, 'k', { value: '"c"', context: both.context, client: 3, seq: 1 })
      await vi.waitFor(() => {
        for (const r of [r0, r1, r2]) expect(r.read('k').values, mode).toEqual(['"c"'])
      })
      cluster.close()
    }
  })

  it('keeps in dvv mode exactly what core’s DvvSet keeps', () => {
    const region = new BaselineRegion(0, 'dvv')
    region.write('k', { value: '1', context: undefined, client: 0, seq: 1 })
    const seen = region.read('k').context
    region.write('k', { value: '2', context: undefined, client: 1, seq: 1 })
    region.write('k', { value: '3', context: seen, client: 0, seq: 2 })
    let set = DvvSet.update(DvvSet.new([], '1'), { entries: [], anonymous: [] }, 0)
    const ctx = DvvSet.join(set)
    set = DvvSet.update(DvvSet.new([], '2'), set, 0)
    set = DvvSet.update(DvvSet.new(ctx, '3'), set, 0)
    expect(region.read('k').values).toEqual(DvvSet.values(set))
  })

  it('keeps DVV clocks at one entry per region while client-id clocks grow to the pruning cap', () => {
    const few = clockGrowth(3)
    const many = clockGrowth(300)
    expect(few.vvEntries).toBe(3)
    // Pruned to 50 where written; a region's merge of clocks pruned elsewhere may hold a few more.
    expect(many.vvEntries).toBeGreaterThanOrEqual(50)
    expect(many.vvEntries).toBeLessThanOrEqual(53)
    expect(many.dvvBytes).toBeLessThanOrEqual(12)
    expect(many.vvBytes).toBeGreaterThan(20 * many.dvvBytes)
  })
})

describe('the workload', () => {
  it('draws 80% of the keys from the first 20%', () => {
    const random = seeded(42)
    let hot = 0
    for (let i = 0; i < 20_000; i++) if (skewedIndex(random, 1000) < 200) hot++
    expect(hot / 20_000).toBeGreaterThan(0.77)
    expect(hot / 20_000).toBeLessThan(0.85)
  })

  it('summarises latencies', () => {
    expect(latencyStats([1, 2, 3, 4])).toMatchObject({ count: 4, mean: 2.5, p95: 4 })
    expect(median([5, 1, 3])).toBe(3)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([])).toBeNaN()
  })
})
