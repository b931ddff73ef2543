/**
 * The LevelDB replica's `has` without a snapshot: the head cache (`set-head-cache.ts`), which
 * proves a seek saw the state of the head it returns with, under concurrent writes, with
 * eviction; and the compaction a restarted replica runs by itself over sets whose tombstone a
 * previous run left non-empty.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  HLC_ZERO,
  addDots,
  decodeClock,
  freshClock,
  isEmptyClock,
  type DotClock,
} from '@causeway/core'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { LevelPartitionReplica, type StringLevel } from '../../src/storage/level/level-replica.js'
import {
  fromStoreString,
  levelSetKeys,
  toStoreString,
} from '../../src/storage/level/level-set-kv.js'
import { SetHeadCache } from '../../src/storage/level/set-head-cache.js'
import type { SetHead } from '../../src/storage/level/set-head.js'
import type { SetMembership } from '../../src/storage/set-replica.js'
import { elementsOf, setsOf } from './set-compliance.js'

const keys = levelSetKeys('a')
const head = (idx: number, tombstone: DotClock = freshClock()): SetHead => ({
  keys,
  clocks: { clock: freshClock(), tombstone },
  size: 0,
  stamp: { seen: [idx, 0], ts: '' },
})
const cloudOf = (actor: number, n: number) =>
  addDots(
    freshClock(),
    Array.from({ length: n }, (_, i) => ({ actor, counter: 2 * i + 2 })),
  )

describe('SetHeadCache', () => {
  it('holds a head until a commit touching its set starts, then takes the commit’s', () => {
    const cache = new SetHeadCache()
    cache.starting(['a'])
    cache.committed(new Map([['a', head(1)]]))
    const { head: seen, since } = cache.get('a')!
    expect(seen.stamp.seen[0]).toBe(1)
    expect(since).toBe(cache.view()) // current as of the commit that wrote it
    // A commit of another set, started and written: the head still holds.
    cache.starting(['b'])
    expect(cache.view()).toBe(since) // a view taken now may or may not hold b's commit
    expect(cache.holds('a', seen)).toBe(true)
    cache.committed(new Map([['b', head(2)]]))
    expect(cache.holds('a', seen)).toBe(true)
    expect(cache.get('b')!.since).toBe(since + 1)
    // A commit of `a`: while it is written `a` is not cached, and the old head no longer holds.
    cache.starting(['a'])
    expect(cache.get('a')).toBeUndefined()
    expect(cache.holds('a', seen)).toBe(false)
    cache.committed(new Map([['a', head(3)]]))
    expect(cache.holds('a', seen)).toBe(false)
    expect(cache.get('a')!.head.stamp.seen[0]).toBe(3)
    expect(cache.get('a')!.since).toBe(since + 2)
  })

  it('remembers a head read from the store only if no commit started since its token', () => {
    const cache = new SetHeadCache()
    const token = cache.token()
    cache.starting(['b']) // any commit: it might have touched the set
    cache.committed(new Map())
    cache.remember('a', head(0), token)
    expect(cache.get('a')).toBeUndefined()
    // A token taken while a commit is written never holds.
    cache.starting(['b'])
    const during = cache.token()
    cache.committed(new Map())
    cache.remember('a', head(0), during)
    expect(cache.get('a')).toBeUndefined()
    const fresh = cache.token()
    cache.remember('a', head(5), fresh)
    expect(cache.get('a')!.head.stamp.seen[0]).toBe(5)
    expect(cache.get('a')!.since).toBe(fresh)
    // Clearing (the replica closes) forgets every head and every token.
    const before = cache.token()
    cache.clear()
    expect(cache.size).toBe(0)
    cache.remember('a', head(6), before)
    expect(cache.get('a')).toBeUndefined()
  })

  it('evicts the least recently used sets beyond its bounds of sets and of cloud dots', () => {
    const cache = new SetHeadCache({ maxSets: 3, maxCloudDots: 10 })
    const put = (name: string, tombstone?: DotClock) =>
      cache.remember(name, head(1, tombstone), cache.token())
    put('a')
    put('b')
    put('c')
    cache.get('a') // a is now the most recently used
    put('d')
    expect(cache.size).toBe(3)
    expect(cache.get('b')).toBeUndefined()
    expect(cache.get('a')).toBeDefined()
    // Clouds of 8 and 3 dots: the older goes so that the dots fit.
    put('big', cloudOf(0, 8))
    put('e', cloudOf(1, 3))
    expect(cache.get('big')).toBeUndefined()
    expect(cache.get('e')).toBeDefined()
    // A head larger than the whole bound is never cached; no sets at all turns the cache off.
    put('huge', cloudOf(2, 11))
    expect(cache.get('huge')).toBeUndefined()
    const off = new SetHeadCache({ maxSets: 0 })
    off.starting(['a'])
    off.committed(new Map([['a', head(1)]]))
    expect(off.get('a')).toBeUndefined()
  })
})

describe('LevelDB has under concurrent writes', () => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  async function counted(db: StringLevel): Promise<LevelPartitionReplica> {
    const r = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2, db })
    cleanup.push(() => r.close())
    await r.open()
    return r
  }

  // Counts the snapshots taken, so a test can show both ways of `has` ran.
  function snapshots(db: StringLevel): () => number {
    let n = 0
    const take = db.snapshot.bind(db)
    db.snapshot = (...args: Parameters<typeof take>) => (n++, take(...args))
    return () => n
  }

  const stores: [string, () => Promise<StringLevel>][] = [
    ['memory-level', async () => new MemoryLevel<string, string>({ storeEncoding: 'utf8' })],
    [
      'classic-level',
      async () => {
        const location = await mkdtemp(join(tmpdir(), 'causeway-has-'))
        cleanup.push(() => rm(location, { recursive: true, force: true }))
        return new ClassicLevel<string, string>(location)
      },
    ],
  ]

  describe.each(stores)('%s', (_label, store) => {
    it('returns dots and a stamp of the same state while writes race', async () => {
      const db = await store()
      const taken = snapshots(db)
      const r = await counted(db)
      const sets = setsOf(r)
      await sets.write('other', { op: 'add', elements: [{ element: 'o' }] }, HLC_ZERO)
      // The plan: adds and removes of `x` in `s`, with writes of another set between them. Each
      // write takes the next idx when called, so the state after every idx is known in advance.
      const base = r.sv()[0]!
      const after = new Map<number, { found: boolean; counter: number }>()
      const plan: ('add' | 'remove' | 'other')[] = []
      let adds = 0
      for (let k = 0; k < 240; k++) {
        const op = k % 3 === 2 ? 'other' : k % 4 < 2 ? 'add' : 'remove'
        plan.push(op)
        if (op === 'add') adds++
        if (op !== 'other') after.set(base + k + 1, { found: op === 'add', counter: adds })
      }
      const results: SetMembership[] = []
      let done = false
      const readers = Array.from({ length: 4 }, async () => {
        for (let n = 0; n < 5000 && !done; n++) results.push(await sets.has('s', 'x'))
      })
      const writes: Promise<unknown>[] = []
      for (const [k, op] of plan.entries()) {
        const name = op === 'other' ? 'other' : 's'
        const element = op === 'other' ? `o${k}` : 'x'
        writes.push(
          sets.write(
            name,
            { op: op === 'remove' ? 'remove' : 'add', elements: [{ element }] },
            HLC_ZERO,
          ),
        )
        if (k % 5 === 0) await new Promise((resolve) => setImmediate(resolve))
      }
      await Promise.all(writes)
      done = true
      await Promise.all(readers)
      expect(results.length).toBeGreaterThan(50)
      for (const m of results) {
        const idx = m.stamp.seen[0]!
        if (idx <= base) {
          expect(m.dots).toEqual([])
          continue
        }
        const expected = after.get(idx)
        expect(expected).toBeDefined()
        expect(m.dots.map((d) => d.counter)).toEqual(expected!.found ? [expected!.counter] : [])
      }
      // Some reads used the cache (no snapshot), some fell back while `s` was being written.
      expect(taken()).toBeGreaterThan(0)
      expect(taken()).toBeLessThan(results.length)
    })

    it('a has after an acknowledged write sees it, with other sets written meanwhile', async () => {
      const db = await store()
      const r = await counted(db)
      const sets = setsOf(r)
      let stop = false
      const noise = (async () => {
        for (let i = 0; i < 5000 && !stop; i++)
          await sets.write(`n${i % 7}`, { op: 'add', elements: [{ element: `e${i}` }] }, HLC_ZERO)
      })()
      for (let i = 0; i < 60; i++) {
        const op = i % 2 === 0 ? 'add' : 'remove'
        const entry = await sets.write('s', { op, elements: [{ element: 'x' }] }, HLC_ZERO)
        const m = await sets.has('s', 'x')
        expect(m.stamp.seen[0]).toBe(entry.idx)
        expect(m.dots.length).toBe(op === 'add' ? 1 : 0)
      }
      stop = true
      await noise
    })
  })

  it('a has of a cached set is one seek on an open iterator, never through a stale one', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    // Counts what has reads besides the element's keys (snapshots, values), and iterators opened.
    let others = 0
    let opened = 0
    const snapshot = db.snapshot.bind(db)
    db.snapshot = ((...args: Parameters<typeof snapshot>) => (
      others++,
      snapshot(...args)
    )) as typeof db.snapshot
    const getMany = db.getMany.bind(db)
    db.getMany = ((...args: Parameters<typeof getMany>) => (
      others++,
      getMany(...args)
    )) as typeof db.getMany
    const keys = db.keys.bind(db)
    db.keys = ((...args: Parameters<typeof keys>) => (opened++, keys(...args))) as typeof db.keys
    const r = await counted(db)
    const sets = setsOf(r)
    const add = (name: string, element: string) =>
      sets.write(name, { op: 'add', elements: [{ element }] }, HLC_ZERO)
    // Counts what `has` alone reads (writes read heads and open iterators of their own).
    const has = async (name: string, element: string) => {
      const [o, i] = [others, opened]
      const m = await sets.has(name, element)
      reads.others += others - o
      reads.opened += opened - i
      return m
    }
    const reads = { others: 0, opened: 0 }
    await add('a', 'x') // its commit caches a's head
    for (let i = 0; i < 20; i++) {
      await add('b', `y${i}`) // writes of another set leave a's head and the iterator's view of a
      expect((await has('a', 'x')).dots).toHaveLength(1)
      expect((await has('a', `x${i}`)).dots).toEqual([])
    }
    expect(reads).toEqual({ others: 0, opened: 1 })
    for (let i = 0; i < 20; i++) {
      const entry = await add('a', `x${i}`) // each commit of a: the open iterator's view is stale
      const m = await has('a', `x${i}`)
      expect(m.dots).toHaveLength(1)
      expect(m.stamp.seen[0]).toBe(entry.idx)
    }
    expect(reads).toEqual({ others: 0, opened: 21 }) // each stale iterator was replaced
  })

  it('answers right for sets evicted from the cache and read again', async () => {
    const r = await counted(new MemoryLevel<string, string>({ storeEncoding: 'utf8' }))
    const sets = setsOf(r)
    const names = Array.from({ length: 5000 }, (_, i) => `s${i}`) // more than the cache keeps
    await Promise.all(
      names.map((name) => sets.write(name, { op: 'add', elements: [{ element: 'x' }] }, HLC_ZERO)),
    )
    for (const name of names) expect((await sets.has(name, 'x')).dots).toHaveLength(1)
    // s0 was evicted long ago; written while not cached, then read again.
    await sets.write('s0', { op: 'remove', elements: [{ element: 'x' }] }, HLC_ZERO)
    expect((await sets.has('s0', 'x')).dots).toEqual([])
    // s4999 is cached: the commit updates it.
    await sets.write('s4999', { op: 'remove', elements: [{ element: 'x' }] }, HLC_ZERO)
    expect((await sets.has('s4999', 'x')).dots).toEqual([])
    await sets.write('s4999', { op: 'add', elements: [{ element: 'x' }] }, HLC_ZERO)
    expect((await sets.has('s4999', 'x')).dots).toHaveLength(1)
  })
})

describe('LevelDB compaction after a restart', () => {
  let location: string | undefined
  afterEach(async () => {
    if (location !== undefined) await rm(location, { recursive: true, force: true })
    location = undefined
  })

  async function elementKeys(db: StringLevel, name: string): Promise<number> {
    const keys = levelSetKeys(name)
    const stored = await db
      .keys({ gte: toStoreString(keys.elementsStart), lt: toStoreString(keys.elementsEnd) })
      .all()
    return stored.length
  }

  async function tombstone(db: StringLevel, name: string): Promise<DotClock> {
    const text = await db.get(toStoreString(levelSetKeys(name).tombstone))
    return decodeClock(text === undefined ? undefined : fromStoreString(text))
  }

  it('deletes the covered keys a previous run left, in the background, set unchanged', async () => {
    location = await mkdtemp(join(tmpdir(), 'causeway-restart-'))
    const open = async () => {
      const db = new ClassicLevel<string, string>(location!)
      const r = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2, db })
      await r.open()
      return { r, db }
    }
    let { r } = await open()
    // Sets whose names need escaping, one untouched, one emptied, one partly removed.
    const names = ['s', 'with\u0000zero', 'é', 'kept']
    const elements = Array.from({ length: 40 }, (_, i) => ({ element: `e${i}` }))
    for (const name of names) await setsOf(r).write(name, { op: 'add', elements }, HLC_ZERO)
    // One commit of removes, then a close before their background compaction ran.
    await Promise.all([
      setsOf(r).write('s', { op: 'remove', elements: elements.slice(0, 15) }, HLC_ZERO),
      setsOf(r).write('with\u0000zero', { op: 'remove', elements }, HLC_ZERO),
      setsOf(r).write('é', { op: 'remove', elements: elements.slice(30) }, HLC_ZERO),
    ])
    const all = elements.map((e) => e.element)
    const before = new Map<string, string[]>([
      ['s', all.slice(15).sort()],
      ['with\u0000zero', []],
      ['é', all.slice(0, 30).sort()],
      ['kept', all.sort()],
    ])
    // Closed before the background compaction of the removes ran: their keys stay, covered.
    await r.close()
    const raw = new ClassicLevel<string, string>(location)
    await raw.open()
    expect(await elementKeys(raw, 's')).toBe(40)
    expect(await elementKeys(raw, 'with\u0000zero')).toBe(40)
    expect(isEmptyClock(await tombstone(raw, 's'))).toBe(false)
    await raw.close()

    const reopened = await open()
    r = reopened.r
    const db = reopened.db
    try {
      const expected = { s: 25, 'with\u0000zero': 0, é: 30, kept: 40 } as Record<string, number>
      const until = Date.now() + 5000
      for (;;) {
        let settled = true
        for (const name of names) {
          if ((await elementKeys(db, name)) !== expected[name]) settled = false
          if (!isEmptyClock(await tombstone(db, name))) settled = false
        }
        if (settled) break
        if (Date.now() > until) throw new Error('the restarted replica did not compact')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      for (const name of names) {
        expect(await elementsOf(r, name)).toEqual(before.get(name))
        expect((await setsOf(r).size(name)).size).toBe(expected[name])
      }
    } finally {
      await r.close()
    }
  })
})
