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
import { CommitKv, fromStoreString, toStoreString } from '../../src/storage/level/level-set-kv.js'
import { levelSetKeys } from '../../src/storage/level/level-sets.js'
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

  it('reads a commit’s own writes over the store, in byte order', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    await db.open()
    cleanup.push(() => db.close())
    const bytes = (...b: number[]) => Uint8Array.from(b)
    await db.batch([
      { type: 'put', key: toStoreString(bytes(1, 0)), value: '' },
      { type: 'put', key: toStoreString(bytes(1, 0xff)), value: '' },
      { type: 'put', key: toStoreString(bytes(2)), value: '' },
    ])
    const kv = new CommitKv(db)
    await kv.batch([
      { type: 'put', key: bytes(1, 0x80), value: bytes(9) },
      { type: 'del', key: bytes(1, 0xff) },
      { type: 'put', key: bytes(0), value: bytes() },
      { type: 'put', key: bytes(1), value: bytes() },
    ])
    const keys = async (range: object) => {
      const out: number[][] = []
      for await (const k of kv.keys(range)) out.push([...k])
      return out
    }
    expect(await keys({})).toEqual([[0], [1], [1, 0], [1, 0x80], [2]])
    expect(await keys({ gt: bytes(1), lt: bytes(2) })).toEqual([
      [1, 0],
      [1, 0x80],
    ])
    expect(await keys({ gte: bytes(1, 0x80), limit: 1 })).toEqual([[1, 0x80]])
    expect(await kv.get(bytes(1, 0xff))).toBeUndefined()
    expect(await kv.get(bytes(1, 0x80))).toEqual(bytes(9))
    expect(await kv.getMany([bytes(2), bytes(1, 0xff)])).toEqual([bytes(), undefined])
    // The string reads planning uses: seeks in one scope's iterator, merged with pending writes.
    const text = (...b: number[]) => toStoreString(bytes(...b))
    const scope = { gte: text(1), lt: text(2) }
    expect(await kv.keyTexts(text(1), text(1, 0xff, 0), scope)).toEqual([
      text(1),
      text(1, 0),
      text(1, 0x80),
    ])
    expect(await kv.keyTexts(text(1, 0x81), text(2), scope)).toEqual([]) // 1 ff is deleted
    expect(await kv.keyTexts(text(1, 0), text(1, 0x80), scope)).toEqual([text(1, 0)]) // again
    await expect(kv.keyTexts(text(0), text(1), scope)).rejects.toThrow(RangeError)
    expect(await kv.getTexts([text(1, 0x80), text(1, 0xff), text(2), text(3)])).toEqual([
      text(9),
      undefined,
      '',
      undefined,
    ])
    kv.close()
    // A commit whose first range is not the scope's first: its iterator opens there, and a later
    // range before it gets an iterator of its own (a seek before the first would end the first).
    const later = new CommitKv(db)
    expect(await later.keyTexts(text(1, 0x80), text(2), scope)).toEqual([text(1, 0xff)])
    expect(await later.keyTexts(text(1, 0), text(1, 0x80), scope)).toEqual([text(1, 0)])
    expect(await later.keyTexts(text(1, 0xff), text(2), scope)).toEqual([text(1, 0xff)])
    expect(await later.keyTexts(text(1), text(1, 0xff), scope)).toEqual([text(1, 0)])
    later.close()
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
