import { describe, expect, it } from 'vitest'
import { clockOf, freshClock, isEmptyClock, hasSeen } from '../../src/bigset/clock.js'
import { planCompaction } from '../../src/bigset/compaction.js'
import type { BigsetDelta } from '../../src/bigset/delta.js'
import type { Dot } from '../../src/bigset/dot.js'
import { BigsetKeys } from '../../src/bigset/keys.js'
import { collectElements, KvBigset } from '../../src/bigset/kv-bigset.js'
import { MemoryOrderedKv } from '../../src/bigset/memory-kv.js'
import type { KvRange, KvWrite, OrderedKv } from '../../src/bigset/ordered-kv.js'
import { readClocks, type SetEntry, type StoredElementKey } from '../../src/bigset/reads.js'
import {
  mergeElementDots,
  mergeReplicaStreams,
  type ReplicaEntries,
} from '../../src/bigset/replica-merge.js'

const keys = BigsetKeys.forSet('letters', 'bs/')
const dot = (actor: number, counter: number): Dot => ({ actor, counter })

/** Counts keys pulled from the store and whether iterators were released. */
class PullCountingKv implements OrderedKv {
  readonly inner = new MemoryOrderedKv()
  pulled = 0
  open = 0
  get(key: Uint8Array) {
    return this.inner.get(key)
  }
  batch(writes: readonly KvWrite[]) {
    return this.inner.batch(writes)
  }
  async *keys(range: KvRange) {
    this.open++
    try {
      for await (const k of this.inner.keys(range)) {
        this.pulled++
        yield k
      }
    } finally {
      this.open--
    }
  }
}

async function take<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

async function filled(n: number, kv: OrderedKv = new MemoryOrderedKv()): Promise<KvBigset> {
  const set = new KvBigset(kv, keys)
  const ops = Array.from({ length: n }, (_, i) => ({ element: `e${String(i).padStart(5, '0')}` }))
  for (let i = 0; i < ops.length; i += 1000) await set.insert(0, ops.slice(i, i + 1000))
  return set
}

describe('bigset has and scan', () => {
  it("has returns the element's live dots, and nothing once they are removed", async () => {
    const set = new KvBigset(new MemoryOrderedKv(), keys)
    expect(await set.has('a')).toEqual([])
    await set.insert(0, [{ element: 'a' }])
    await set.insert(1, [{ element: 'a' }, { element: 'ab' }])
    expect(await set.has('a')).toEqual([dot(0, 1), dot(1, 1)])
    await set.remove([{ element: 'a', ctx: [dot(0, 1)] }])
    expect(await set.has('a')).toEqual([dot(1, 1)])
    await set.remove([{ element: 'a', ctx: [dot(1, 1)] }])
    expect(await set.has('a')).toEqual([])
    expect(await set.has('ab')).toEqual([dot(1, 2)])
  })

  it('scans in code point order from an element, after an element, up to a limit', async () => {
    const set = new KvBigset(new MemoryOrderedKv(), keys)
    const elements = ['', 'a', 'a\u0000', 'ab', 'b', '\uffff', '😀']
    await set.insert(
      0,
      elements.map((element) => ({ element })),
    )
    await set.remove([{ element: 'ab', ctx: await set.has('ab') }])
    const live = elements.filter((e) => e !== 'ab')
    expect(await collectElements(set.scan())).toEqual(live)
    expect(await collectElements(set.scan({ from: 'a\u0000' }))).toEqual([
      'a\u0000',
      'b',
      '\uffff',
      '😀',
    ])
    expect(await collectElements(set.scan({ from: 'aa' }))).toEqual(['b', '\uffff', '😀'])
    expect(await collectElements(set.scan({ after: 'a' }))).toEqual([
      'a\u0000',
      'b',
      '\uffff',
      '😀',
    ])
    expect(await collectElements(set.scan({ after: 'a', limit: 2 }))).toEqual(['a\u0000', 'b'])
    expect(await collectElements(set.scan({ limit: 0 }))).toEqual([])
    await expect(set.scan({ from: 'a', after: 'b' }).next()).rejects.toThrow(RangeError)
  })

  it('pages through a set with `after` cursors, reading only what each page needs', async () => {
    const kv = new PullCountingKv()
    const set = await filled(3000, kv)
    const seenElements: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < 10; page++) {
      kv.pulled = 0
      const entries: SetEntry[] = await take(set.scan({ after: cursor, limit: 300 }))
      // One key past the page is read to know the page's last element is complete.
      expect(kv.pulled).toBeLessThanOrEqual(301)
      seenElements.push(...entries.map((e) => e.element))
      cursor = entries[entries.length - 1]?.element
    }
    expect(seenElements).toHaveLength(3000)
    expect(new Set(seenElements).size).toBe(3000)
    expect(kv.open).toBe(0)
  })

  it('answers has with one read and a seek to the element, whatever the size of the set', async () => {
    const kv = new PullCountingKv()
    const set = await filled(3000, kv)
    let gets = 0
    const get = kv.get.bind(kv)
    kv.get = (key) => (gets++, get(key))
    kv.pulled = 0
    expect(await set.has('e01234')).toEqual([dot(0, 1235)])
    expect(await set.has('e01234x')).toEqual([])
    expect([gets, kv.pulled]).toEqual([2, 1])
  })

  it('releases the store iterator when the reader stops early', async () => {
    const kv = new PullCountingKv()
    const set = await filled(500, kv)
    for await (const e of set.scan()) if (e.element === 'e00010') break
    expect(kv.open).toBe(0)
    expect(kv.pulled).toBeLessThanOrEqual(12)
  })
})

describe('bigset compaction', () => {
  it('deletes the keys the tombstone covers, trims the tombstone, and changes no value', async () => {
    const kv = new MemoryOrderedKv()
    const set = await filled(2500, kv)
    for (let i = 0; i < 2500; i += 3) {
      const element = `e${String(i).padStart(5, '0')}`
      await set.remove([{ element, ctx: await set.has(element) }])
    }
    const before = await take(set.scan())
    expect(before).toHaveLength(2500 - 834)
    expect(kv.size).toBe(2 + 2500)
    const { deleted } = await set.compact({ batchSize: 100 })
    expect(deleted).toBe(834)
    expect(kv.size).toBe(2 + 2500 - 834)
    expect(isEmptyClock((await set.clocks()).tombstone)).toBe(true)
    expect(await take(set.scan())).toEqual(before)
  })

  it('drops tombstone dots whose keys are already gone (a remove delivered twice)', async () => {
    const set = new KvBigset(new MemoryOrderedKv(), keys)
    const { delta } = await set.insert(0, [{ element: 'x' }])
    const removal: BigsetDelta = {
      adds: [],
      removes: [{ element: 'x', ctx: [delta.adds[0]!.dot] }],
    }
    await set.apply(removal)
    await set.compact()
    await set.apply(removal) // the duplicate puts the dot back in the tombstone, with no key to delete
    expect(isEmptyClock((await set.clocks()).tombstone)).toBe(false)
    expect(await set.compact()).toEqual({ deleted: 0 })
    expect(isEmptyClock((await set.clocks()).tombstone)).toBe(true)
    await set.apply(delta) // and the add, delivered again, stays removed
    expect(await set.has('x')).toEqual([])
  })

  it('compacts during a read: the scan reports covered keys and the plan deletes them', async () => {
    const kv = new MemoryOrderedKv()
    const set = await filled(20, kv)
    await set.remove([{ element: 'e00003', ctx: await set.has('e00003') }])
    const seventh = await set.has('e00007')
    await set.remove([{ element: 'e00007', ctx: seventh }])
    const covered: StoredElementKey[] = []
    const elements = await collectElements(
      set.scan({ limit: 5, onCovered: (k) => covered.push(k) }),
    )
    expect(elements).toEqual(['e00000', 'e00001', 'e00002', 'e00004', 'e00005'])
    expect(covered.map((k) => k.element)).toEqual(['e00003'])
    const { tombstone } = await readClocks(kv, keys)
    const plan = planCompaction(keys, tombstone, covered)
    await kv.batch(plan.writes)
    expect(kv.size).toBe(2 + 19)
    expect(hasSeen(plan.tombstone, covered[0]!.dot)).toBe(false)
    // The walk stopped before e00007: its dot stays in the tombstone for a later pass.
    expect(hasSeen(plan.tombstone, seventh[0]!)).toBe(true)
    expect(await collectElements(set.scan())).toHaveLength(18)
  })
})

describe('bigset replica merge (streaming ORSWOT join)', () => {
  const c = (vv: [number, number][], cloud: [number, number[]][] = []) => clockOf(vv, cloud)

  it('keeps a dot both sides have, or that the other side has not seen; drops one it has seen and lacks', () => {
    const a = c([[0, 2]])
    const b = c([
      [0, 1],
      [1, 1],
    ])
    expect(
      mergeElementDots([
        { clock: a, dots: [dot(0, 1)] },
        { clock: b, dots: [dot(0, 1)] },
      ]),
    ).toEqual([dot(0, 1)])
    // a has {0,2}; b has not seen it: it survives.
    expect(
      mergeElementDots([
        { clock: a, dots: [dot(0, 2)] },
        { clock: b, dots: undefined },
      ]),
    ).toEqual([dot(0, 2)])
    // b has {0,1}'s... a has seen {0,1} and lacks it: a removed it.
    expect(
      mergeElementDots([
        { clock: a, dots: undefined },
        { clock: b, dots: [dot(0, 1), dot(1, 1)] },
      ]),
    ).toEqual([dot(1, 1)])
    // A replica that has never seen the set vetoes nothing.
    expect(
      mergeElementDots([
        { clock: freshClock(), dots: undefined },
        { clock: b, dots: [dot(1, 1)] },
      ]),
    ).toEqual([dot(1, 1)])
  })

  async function* stream(
    entries: SetEntry[],
    log: string[],
    name: string,
  ): AsyncGenerator<SetEntry> {
    try {
      for (const e of entries) {
        log.push(`${name}:${e.element}`)
        yield e
      }
    } finally {
      log.push(`${name}:closed`)
    }
  }

  it('merges ordered streams element by element, with repairs, pulling one entry ahead per replica', async () => {
    const log: string[] = []
    const a: ReplicaEntries = {
      clock: c([[0, 3]]),
      entries: stream(
        [
          { element: 'apple', dots: [dot(0, 1)] },
          { element: 'cherry', dots: [dot(0, 3)] },
        ],
        log,
        'a',
      ),
    }
    const b: ReplicaEntries = {
      clock: c([
        [0, 2],
        [1, 1],
      ]),
      entries: stream(
        [
          { element: 'apple', dots: [dot(0, 1)] },
          { element: 'banana', dots: [dot(0, 2), dot(1, 1)] },
        ],
        log,
        'b',
      ),
    }
    const repairs: [number, BigsetDelta][] = []
    const merged = mergeReplicaStreams([a, b], { onRepair: (i, d) => repairs.push([i, d]) })
    const first = await merged.next()
    expect(first.value).toEqual({ element: 'apple', dots: [dot(0, 1)] })
    expect(log).toEqual(['a:apple', 'b:apple', 'a:cherry', 'b:banana'])
    expect(await take(merged)).toEqual([
      { element: 'banana', dots: [dot(1, 1)] }, // a removed {0,2}; {1,1} is new to a
      { element: 'cherry', dots: [dot(0, 3)] },
    ])
    expect(repairs).toEqual([
      [0, { adds: [{ element: 'banana', dot: dot(1, 1), ctx: [] }], removes: [] }],
      [1, { adds: [], removes: [{ element: 'banana', ctx: [dot(0, 2)] }] }],
      [1, { adds: [{ element: 'cherry', dot: dot(0, 3), ctx: [] }], removes: [] }],
    ])
  })

  it('stops every source when the reader stops, and honours a limit', async () => {
    const log: string[] = []
    const entries = (n: string) =>
      stream(
        ['p', 'q', 'r', 's'].map((element) => ({ element, dots: [dot(0, 1)] })),
        log,
        n,
      )
    const clock = c([[0, 1]])
    const out = await take(
      mergeReplicaStreams(
        [
          { clock, entries: entries('a') },
          { clock, entries: entries('b') },
        ],
        { limit: 2 },
      ),
    )
    expect(out.map((e) => e.element)).toEqual(['p', 'q'])
    expect(log.filter((l) => l.endsWith('closed')).sort()).toEqual(['a:closed', 'b:closed'])
  })

  it('refuses a replica that streams out of order', async () => {
    const log: string[] = []
    const bad = stream(
      [
        { element: 'b', dots: [dot(0, 1)] },
        { element: 'a', dots: [dot(0, 2)] },
      ],
      log,
      'bad',
    )
    await expect(take(mergeReplicaStreams([{ clock: c([[0, 2]]), entries: bad }]))).rejects.toThrow(
      /out of order/,
    )
  })
})
