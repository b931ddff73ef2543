/**
 * Sets on the LevelDB replica: the set compliance suite on memory-level and classic-level, and
 * what is LevelDB's own: removes only write clocks, and compaction (background, during scans,
 * full passes) deletes the covered keys and trims the tombstone without rewriting the set.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HLC_ZERO, decodeClock, isEmptyClock } from '@causeway/core'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { LevelPartitionReplica, type StringLevel } from '../../src/storage/level/level-replica.js'
import {
  fromStoreString,
  levelSetKeys,
  toStoreString,
} from '../../src/storage/level/level-set-kv.js'
import type { SetWrite } from '../../src/storage/set-replica.js'
import { elementsOf, setCompliance, setsOf } from './set-compliance.js'

setCompliance('level: memory-level', async (shape) => {
  const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
  return {
    replica: (options) => new LevelPartitionReplica({ ...shape, ...options, db }),
    destroy: async () => {},
  }
})

setCompliance('level: classic-level', async (shape) => {
  const location = await mkdtemp(join(tmpdir(), 'causeway-sets-'))
  return {
    replica: (options) =>
      new LevelPartitionReplica({ ...shape, ...options, location, sync: false }),
    destroy: () => rm(location, { recursive: true, force: true }),
  }
})

describe('LevelDB sets', () => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  async function replica(): Promise<{ r: LevelPartitionReplica; db: StringLevel }> {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    const r = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2, db })
    cleanup.push(() => r.close())
    await r.open()
    return { r, db }
  }

  async function elementKeys(db: StringLevel, name: string): Promise<number> {
    const keys = levelSetKeys(name)
    let n = 0
    for await (const _ of db.keys({
      gte: toStoreString(keys.elementsStart),
      lt: toStoreString(keys.elementsEnd),
    }))
      n++
    return n
  }

  async function tombstone(db: StringLevel, name: string) {
    const text = await db.get(toStoreString(levelSetKeys(name).tombstone))
    return decodeClock(text === undefined ? undefined : fromStoreString(text))
  }

  /** Waits (bounded) until `check` holds. */
  async function eventually(check: () => Promise<boolean>, ms = 2000): Promise<void> {
    const until = Date.now() + ms
    while (!(await check())) {
      if (Date.now() > until) throw new Error('condition not reached')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  it('plans each entry of a commit against the earlier entries of the same commit', async () => {
    // The same writes, grouped into one commit and one at a time, leave the same set: a remove
    // without a context removes what the add before it in the commit wrote.
    const writes: SetWrite[] = [
      { op: 'add', elements: [{ element: 'x' }] },
      { op: 'remove', elements: [{ element: 'x' }] },
      { op: 'add', elements: [{ element: 'x' }, { element: 'y' }] },
      { op: 'add', elements: [{ element: 'y' }] },
      { op: 'remove', elements: [{ element: 'y' }] },
      { op: 'add', elements: [{ element: 'z' }] },
    ]
    const grouped = await replica()
    let batches = 0
    grouped.db.on('write', () => batches++)
    await Promise.all(writes.map((w) => setsOf(grouped.r).write('s', w, HLC_ZERO)))
    expect(batches).toBe(1)
    const single = await replica()
    for (const w of writes) await setsOf(single.r).write('s', w, HLC_ZERO)
    for (const { r } of [grouped, single]) {
      expect(await elementsOf(r, 's')).toEqual(['x', 'z'])
      expect((await setsOf(r).size('s')).size).toBe(2)
      // One live insertion per element: each add superseded the one before it.
      expect((await setsOf(r).has('s', 'x')).dots).toEqual([{ actor: 0, counter: 2 }])
      expect((await setsOf(r).has('s', 'y')).dots).toEqual([])
    }
  })

  it('writes the same byte keys the codec makes, element keys in codec order', async () => {
    const { r, db } = await replica()
    await setsOf(r).write(
      's',
      { op: 'add', elements: [{ element: '😀' }, { element: 'é' }] },
      HLC_ZERO,
    )
    const keys = levelSetKeys('s')
    const stored: string[] = []
    for await (const k of db.keys({
      gte: toStoreString(keys.elementsStart),
      lt: toStoreString(keys.elementsEnd),
    }))
      stored.push(keys.decodeElement(fromStoreString(k)).element)
    expect(stored).toEqual(['é', '😀'])
  })

  it('a remove writes clocks only; background compaction then deletes the keys', async () => {
    const { r, db } = await replica()
    const elements = Array.from({ length: 50 }, (_, i) => ({ element: `e${i}` }))
    await setsOf(r).write('s', { op: 'add', elements }, HLC_ZERO)
    let batches = 0
    const onWrite = () => batches++
    db.on('write', onWrite)
    const before = await elementKeys(db, 's')
    await setsOf(r).write('s', { op: 'remove', elements: elements.slice(0, 10) }, HLC_ZERO)
    // The remove's own batch deleted nothing: the keys are hidden by the tombstone.
    expect(batches).toBe(1)
    expect(before).toBe(50)
    expect(await elementKeys(db, 's')).toBe(50)
    expect(await elementsOf(r, 's')).toHaveLength(40)
    // A later commit compacts them and trims the tombstone.
    await eventually(async () => (await elementKeys(db, 's')) === 40)
    await eventually(async () => isEmptyClock(await tombstone(db, 's')))
    db.off('write', onWrite)
    expect(await elementsOf(r, 's')).toHaveLength(40)
    expect((await setsOf(r).size('s')).size).toBe(40)
  })

  it('compacts covered keys a scan walks over, and in a full pass', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    let r = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2, db })
    await r.open()
    const elements = Array.from({ length: 20 }, (_, i) => ({ element: `e${i}` }))
    await setsOf(r).write('s', { op: 'add', elements }, HLC_ZERO)
    await setsOf(r).write('s', { op: 'remove', elements: elements.slice(0, 5) }, HLC_ZERO)
    // Closing drops the pending background compaction: the keys stay, hidden.
    await r.close()
    await db.open()
    expect(await elementKeys(db, 's')).toBe(20)
    r = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2, db })
    cleanup.push(() => r.close())
    await r.open()
    expect(await elementsOf(r, 's')).toHaveLength(15)
    await eventually(async () => (await elementKeys(db, 's')) === 15)
    // A full pass: remove more, then compact explicitly.
    await setsOf(r).write('s', { op: 'remove', elements: elements.slice(5, 8) }, HLC_ZERO)
    const { deleted } = await r.compactSet('s')
    expect(deleted).toBeLessThanOrEqual(3)
    expect(await elementKeys(db, 's')).toBe(12)
    expect(isEmptyClock(await tombstone(db, 's'))).toBe(true)
    expect((await setsOf(r).size('s')).size).toBe(12)
  })

  it('reads the elements of one commit in any order', async () => {
    // Removes without a context remove what they find: each must find its element's keys, in
    // whatever order the commit reads them.
    const { r, db } = await replica()
    const elements = ['a', 'm', 'z'].map((element) => ({ element }))
    await setsOf(r).write('s', { op: 'add', elements }, HLC_ZERO)
    let batches = 0
    db.on('write', () => batches++)
    await Promise.all(
      ['z', 'a', 'm'].map((element) =>
        setsOf(r).write('s', { op: 'remove', elements: [{ element }] }, HLC_ZERO),
      ),
    )
    expect(batches).toBe(1)
    expect(await elementsOf(r, 's')).toEqual([])
    expect((await setsOf(r).size('s')).size).toBe(0)
  })

  it('reads a store that changed while the replica was closed as it is now', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    const shape = { region: 0, partition: 0, replica: 0, regions: 2, db }
    const r = new LevelPartitionReplica(shape)
    cleanup.push(() => r.close())
    await r.open()
    // A write still queued when the replica closes is committed by the close (and its set's
    // head kept in memory).
    const queued = setsOf(r).write('s', { op: 'add', elements: [{ element: 'x' }] }, HLC_ZERO)
    await r.close()
    await queued
    // Another replica over the same store changes the set meanwhile.
    await db.open()
    const other = new LevelPartitionReplica(shape)
    await other.open()
    await setsOf(other).write('s', { op: 'add', elements: [{ element: 'y' }] }, HLC_ZERO)
    await setsOf(other).write('s', { op: 'remove', elements: [{ element: 'x' }] }, HLC_ZERO)
    await other.close()
    await r.open()
    expect((await setsOf(r).has('s', 'x')).dots).toEqual([])
    expect((await setsOf(r).has('s', 'y')).dots).toHaveLength(1)
    expect((await setsOf(r).size('s')).size).toBe(1)
    await setsOf(r).write('s', { op: 'add', elements: [{ element: 'z' }] }, HLC_ZERO)
    expect(await elementsOf(r, 's')).toEqual(['y', 'z'])
  })

  it('commits concurrent set writes in few batches (group commit)', async () => {
    const { r, db } = await replica()
    let batches = 0
    db.on('write', () => batches++)
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        setsOf(r).write('s', { op: 'add', elements: [{ element: `e${i}` }] }, HLC_ZERO),
      ),
    )
    expect(batches).toBeLessThanOrEqual(3)
    expect((await setsOf(r).size('s')).size).toBe(200)
  })
})
