import { describe, expect, it } from 'vitest'
import { clocksEqual, clockToJSON, freshClock } from '../../src/bigset/clock.js'
import { decodeClock } from '../../src/bigset/clock-codec.js'
import { deltaFromJSON, deltaToJSON, type BigsetDelta } from '../../src/bigset/delta.js'
import type { Dot } from '../../src/bigset/dot.js'
import { BigsetKeys, compareBytes } from '../../src/bigset/keys.js'
import { MemoryOrderedKv } from '../../src/bigset/memory-kv.js'
import type { KvRange, KvWrite, OrderedKv } from '../../src/bigset/ordered-kv.js'
import { KvBigset } from '../../src/bigset/kv-bigset.js'
import { FRESH_CLOCKS, planApplyDelta, planInsert, planRemove } from '../../src/bigset/writes.js'

const keys = BigsetKeys.forSet('fruit', 'bs/')
const dot = (actor: number, counter: number): Dot => ({ actor, counter })
const keyText = (w: KvWrite) => `${w.type} ${keys.kindOf(w.key)}`

/** An OrderedKv that counts what each call touches. */
class CountingKv implements OrderedKv {
  readonly inner = new MemoryOrderedKv()
  gets = 0
  iterated = 0
  written = 0
  reset() {
    this.gets = this.iterated = this.written = 0
  }
  get(key: Uint8Array) {
    this.gets++
    return this.inner.get(key)
  }
  batch(writes: readonly KvWrite[]) {
    this.written += writes.length
    return this.inner.batch(writes)
  }
  async *keys(range: KvRange) {
    for await (const k of this.inner.keys(range)) {
      this.iterated++
      yield k
    }
  }
}

async function elementsOf(set: KvBigset) {
  const out: { element: string; dots: readonly Dot[] }[] = []
  for await (const e of set.scan()) out.push(e)
  return out
}

describe('bigset insert planner (Algorithm 1)', () => {
  it('writes the clock and one element key; the element key is the delta', () => {
    const plan = planInsert(keys, FRESH_CLOCKS, 2, [{ element: 'apple' }])
    expect(plan.writes.map(keyText)).toEqual(['put clock', 'put element'])
    expect(keys.decodeElement(plan.writes[1]!.key)).toEqual({ element: 'apple', dot: dot(2, 1) })
    expect(plan.delta).toEqual({
      adds: [{ element: 'apple', dot: dot(2, 1), ctx: [] }],
      removes: [],
    })
    expect(clockToJSON(decodeClock((plan.writes[0] as { value: Uint8Array }).value))).toEqual({
      vv: [[2, 1]],
      cloud: [],
    })
  })

  it('sends seen context dots to the tombstone and unseen ones to the clock', () => {
    const first = planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'apple' }])
    const plan = planInsert(keys, first.clocks, 0, [
      { element: 'apple', ctx: [dot(0, 1), dot(1, 4)] },
    ])
    expect(plan.writes.map(keyText)).toEqual(['put clock', 'put tombstone', 'put element'])
    expect(clockToJSON(plan.clocks.tombstone)).toEqual({ vv: [[0, 1]], cloud: [] })
    expect(clockToJSON(plan.clocks.clock)).toEqual({ vv: [[0, 2]], cloud: [[1, [4]]] })
    expect(plan.added[0]!.dot).toEqual(dot(0, 2))
  })

  it('inserts a batch with one clock write, one key per distinct element', () => {
    const plan = planInsert(keys, FRESH_CLOCKS, 1, [
      { element: 'a' },
      { element: 'b' },
      { element: 'a', ctx: [dot(0, 9)] },
    ])
    expect(plan.writes.map(keyText)).toEqual(['put clock', 'put element', 'put element'])
    expect(plan.added).toEqual([
      { element: 'a', dot: dot(1, 1), ctx: [dot(0, 9)] },
      { element: 'b', dot: dot(1, 2), ctx: [] },
    ])
  })

  it('validates its input', () => {
    expect(() => planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'x'.repeat(1025) }])).toThrow(
      /limit is 1024/,
    )
    expect(() => planInsert(keys, FRESH_CLOCKS, -1, [{ element: 'x' }])).toThrow(RangeError)
  })
})

describe('bigset remove planner', () => {
  const added = planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'apple' }])

  it('touches only the clocks', () => {
    const plan = planRemove(keys, added.clocks, [{ element: 'apple', ctx: [dot(0, 1)] }])
    expect(plan.writes.map(keyText)).toEqual(['put tombstone'])
    expect(plan.delta).toEqual({ adds: [], removes: [{ element: 'apple', ctx: [dot(0, 1)] }] })
  })

  it('is a no-op without a context, and ships nothing', () => {
    const plan = planRemove(keys, added.clocks, [
      { element: 'apple' },
      { element: 'pear', ctx: [] },
    ])
    expect(plan.writes).toEqual([])
    expect(plan.delta).toEqual({ adds: [], removes: [] })
  })

  it('records an unseen dot in the clock so its add is never written (a remove that arrives first)', () => {
    const plan = planRemove(keys, FRESH_CLOCKS, [{ element: 'apple', ctx: [dot(3, 7)] }])
    expect(plan.writes.map(keyText)).toEqual(['put clock'])
    const later = planApplyDelta(keys, plan.clocks, {
      adds: [{ element: 'apple', dot: dot(3, 7), ctx: [] }],
      removes: [],
    })
    expect(later.writes).toEqual([])
  })

  it("with removal 'delete', deletes the exact element key instead of growing the tombstone", () => {
    const plan = planRemove(keys, added.clocks, [{ element: 'apple', ctx: [dot(0, 1)] }], {
      removal: 'delete',
    })
    expect(plan.writes.map(keyText)).toEqual(['del element'])
    expect(plan.writes[0]!.key).toEqual(keys.element('apple', dot(0, 1)))
  })
})

describe('bigset plans with the live dots given', () => {
  it('report each touched element’s live dots after the batch, for the next plan', () => {
    const first = planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'apple' }], {
      live: new Map([['apple', []]]),
    })
    expect(first.live).toEqual(new Map([['apple', [dot(0, 1)]]]))
    expect(first.sizeDelta).toBe(1)
    // A re-add superseding the live dot, planned from the first plan's output without a read.
    const again = planInsert(keys, first.clocks, 0, [{ element: 'apple', ctx: [dot(0, 1)] }], {
      live: first.live,
    })
    expect(again.live).toEqual(new Map([['apple', [dot(0, 2)]]]))
    expect(again.sizeDelta).toBe(0)
    const removed = planRemove(keys, again.clocks, [{ element: 'apple', ctx: [dot(0, 2)] }], {
      live: again.live,
    })
    expect(removed.live).toEqual(new Map([['apple', []]]))
    expect(removed.sizeDelta).toBe(-1)
    // Applied elsewhere: the add of a dot already removed there leaves nothing live.
    const replica = planApplyDelta(keys, removed.clocks, first.delta, { live: removed.live })
    expect(replica.live).toEqual(new Map([['apple', []]]))
    expect(planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'x' }]).live).toBeUndefined()
  })
})

describe('bigset replica apply (Algorithm 2)', () => {
  const insert = planInsert(keys, FRESH_CLOCKS, 0, [{ element: 'apple' }])

  it('adds an unseen element key, then skips it when delivered again', () => {
    const once = planApplyDelta(keys, FRESH_CLOCKS, insert.delta)
    expect(once.writes.map(keyText)).toEqual(['put clock', 'put element'])
    const twice = planApplyDelta(keys, once.clocks, insert.delta)
    expect(twice.writes).toEqual([])
    expect(twice.clocks.clock).toBe(once.clocks.clock)
    expect(twice.clocks.tombstone).toBe(once.clocks.tombstone)
  })

  it('absorbs the context of an add even when its dot was seen: a remove of {a,2} seen before the add of {a,2} that removed {a,1}', () => {
    // Replica X has {a,1}; the coordinator re-adds with ctx [{a,1}] as {a,2}; X first hears of a remove of {a,2}.
    const x1 = planApplyDelta(keys, FRESH_CLOCKS, insert.delta)
    const readd = planInsert(keys, insert.clocks, 0, [{ element: 'apple', ctx: [dot(0, 1)] }])
    const x2 = planApplyDelta(keys, x1.clocks, {
      adds: [],
      removes: [{ element: 'apple', ctx: [dot(0, 2)] }],
    })
    const x3 = planApplyDelta(keys, x2.clocks, readd.delta)
    expect(x3.writes.map(keyText)).toEqual(['put tombstone'])
    expect(clockToJSON(x3.clocks.tombstone)).toEqual({ vv: [[0, 1]], cloud: [] })
  })

  it('round-trips deltas through their wire form and refuses malformed ones', () => {
    const delta: BigsetDelta = {
      adds: [{ element: 'é\u0000', dot: dot(1, 2), ctx: [dot(0, 1)] }],
      removes: [{ element: 'x', ctx: [dot(4, 4)] }],
    }
    expect(deltaFromJSON(JSON.parse(JSON.stringify(deltaToJSON(delta))))).toEqual(delta)
    for (const bad of [
      {},
      { v: 2, adds: [], removes: [] },
      { v: 1, adds: [{ e: 1, dot: [0, 1], ctx: [] }], removes: [] },
      { v: 1, adds: [{ e: 'x', dot: [0, 0], ctx: [] }], removes: [] },
      { v: 1, adds: [], removes: [{ e: 'x', ctx: 'all' }] },
    ]) {
      expect(() => deltaFromJSON(bad)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }))
    }
  })
})

describe('bigset writes over a store', () => {
  it.each([
    { trackSize: false, cost: [2, 0, 2, 2, 0, 1] },
    // Counting adds a read of the count and of the element's own keys, and a write of the count.
    { trackSize: true, cost: [3, 0, 3, 3, 1, 2] },
  ])(
    'touches the same number of keys per insert and remove at 10 and at 20 000 elements (%o)',
    async ({ trackSize, cost }) => {
      const kv = new CountingKv()
      const set = new KvBigset(kv, keys, { trackSize })
      const costs: number[][] = []
      for (const target of [10, 20_000]) {
        const ops = []
        for (let i = (await elementsOf(set)).length; i < target; i++) ops.push({ element: `e${i}` })
        for (let i = 0; i < ops.length; i += 2000) await set.insert(0, ops.slice(i, i + 2000))
        kv.reset()
        await set.insert(1, [{ element: `new-${target}` }])
        const insert = [kv.gets, kv.iterated, kv.written]
        const ctx = await set.has(`new-${target}`)
        kv.reset()
        await set.remove([{ element: `new-${target}`, ctx }])
        costs.push([...insert, kv.gets, kv.iterated, kv.written])
      }
      // insert: 2 clock reads, no element read, clock + one element key; remove: 2 reads, tombstone.
      expect(costs).toEqual([cost, cost])
      expect(await set.size()).toBe(20_000)
    },
    20_000,
  )

  it('re-adding an element keeps one key per add, or one in all with supersedeLocal', async () => {
    const plain = new KvBigset(new MemoryOrderedKv(), keys)
    const superseding = new KvBigset(new MemoryOrderedKv(), keys, { supersedeLocal: true })
    for (const set of [plain, superseding])
      for (let i = 0; i < 3; i++) await set.insert(0, [{ element: 'x' }])
    expect(await plain.has('x')).toEqual([dot(0, 1), dot(0, 2), dot(0, 3)])
    expect(await superseding.has('x')).toEqual([dot(0, 3)])
  })

  it('keeps the store ordered: clock, tombstone, then element keys by element', async () => {
    const kv = new MemoryOrderedKv()
    const set = new KvBigset(kv, keys)
    await set.insert(0, [
      { element: 'b' },
      { element: '😀' },
      { element: '\uffff' },
      { element: 'a' },
    ])
    await set.remove([{ element: 'b', ctx: await set.has('b') }])
    const all = kv.allKeys()
    expect(all.map((k) => keys.kindOf(k))).toEqual([
      'clock',
      'tombstone',
      'element',
      'element',
      'element',
      'element',
    ])
    expect(all.slice(2).map((k) => keys.decodeElement(k).element)).toEqual([
      'a',
      'b',
      '\uffff',
      '😀',
    ])
    for (let i = 1; i < all.length; i++) expect(compareBytes(all[i - 1]!, all[i]!)).toBeLessThan(0)
    expect(clocksEqual((await set.clocks()).tombstone, freshClock())).toBe(false)
  })
})
