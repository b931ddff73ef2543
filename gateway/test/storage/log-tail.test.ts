import { HLC_ZERO } from '@causeway/core'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import { LogTail } from '../../src/storage/level/log-tail.js'
import type { LogEntry } from '../../src/storage/partition-replica.js'
import { putEntry } from '@causeway/core'
import { ship } from '../support/log-entries.js'

const ts = '00018f2a3b4c0001'

function entry(idx: number, value = 'v'): LogEntry {
  return putEntry({ origin: 1, idx, key: `k${idx}`, ts, at: 0 }, value)
}

describe('LogTail', () => {
  it('answers reads within the run it holds, and leaves older ones to the store', () => {
    const tail = new LogTail({ entries: 10, chars: 1 << 20 })
    expect(tail.read(0, 5)).toBeUndefined()
    for (let i = 1; i <= 15; i++) tail.append(entry(i))
    expect(tail.size).toBe(10)
    expect(tail.read(4, 5)).toBeUndefined() // 5 was dropped
    expect(tail.read(5, 3)!.map((e) => e.idx)).toEqual([6, 7, 8])
    expect(tail.read(12, 100)!.map((e) => e.idx)).toEqual([13, 14, 15])
    expect(tail.read(15, 10)).toEqual([])
    expect(tail.read(20, 10)).toEqual([])
    expect(tail.read(7, 0)).toEqual([])
  })

  it('bounds the characters it keeps, and keeps no entry larger than the bound', () => {
    const tail = new LogTail({ entries: 100, chars: 400 })
    for (let i = 1; i <= 3; i++) tail.append(entry(i, 'x'.repeat(100)))
    expect(tail.size).toBe(2)
    tail.append(entry(4, 'x'.repeat(1000)))
    expect(tail.size).toBe(0)
    expect(tail.read(3, 1)).toBeUndefined()
    tail.append(entry(5))
    expect(tail.read(3, 5)).toBeUndefined()
    expect(tail.read(4, 5)!.map((e) => e.idx)).toEqual([5])
  })

  it('starts again at an entry that does not follow the newest', () => {
    const tail = new LogTail({ entries: 10, chars: 1 << 20 })
    tail.append(entry(1))
    tail.append(entry(2))
    tail.append(entry(7))
    expect(tail.size).toBe(1)
    expect(tail.read(1, 5)).toBeUndefined()
    expect(tail.read(6, 5)!.map((e) => e.idx)).toEqual([7])
  })

  it('freezes what it holds: every reader shares the objects', () => {
    const tail = new LogTail()
    tail.append(entry(1))
    const [read] = tail.read(0, 1)!
    expect(Object.isFrozen(read)).toBe(true)
    expect(() => {
      ;(read as { value?: string }).value = 'changed'
    }).toThrow(TypeError)
  })

  it('drops the dead front of its array without losing entries', () => {
    const tail = new LogTail({ entries: 3, chars: 1 << 20 })
    for (let i = 1; i <= 500; i++) tail.append(entry(i))
    expect(tail.read(497, 10)!.map((e) => e.idx)).toEqual([498, 499, 500])
  })
})

describe('LevelPartitionReplica readLog from the tail', () => {
  const shape = { region: 0, partition: 0, replica: 0, regions: 2 }
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  function open(db: MemoryLevel<string, string>, replica = 0): LevelPartitionReplica {
    const r = new LevelPartitionReplica({ ...shape, replica, db })
    cleanup.push(() => r.close())
    return r
  }

  it('reads exactly what the store holds: keys, tombstones, siblings, sets and received entries', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    const r = open(db)
    await r.open()
    await r.write('a', '"1"', HLC_ZERO)
    await r.write('a', undefined, HLC_ZERO)
    await r.writeSibling('cart:1', '"x"', HLC_ZERO, [])
    await r.sets.write('s', { op: 'add', elements: [{ element: 'e' }] }, HLC_ZERO)
    await Promise.all(Array.from({ length: 20 }, (_, i) => r.write(`k${i}`, `${i}`, HLC_ZERO)))
    const remote: LogEntry[] = [1, 2, 3].map((idx) =>
      putEntry({ origin: 1, idx, key: `r${idx}`, ts: `00018f2a3b4c000${idx}`, at: 5 }, `"${idx}"`),
    )
    expect(await r.receive(ship(1, remote))).toBe(3)

    const fromTail = [await r.readLog(0, 0, 100), await r.readLog(1, 0, 100)]
    const paged = [await r.readLog(0, 2, 3), await r.readLog(1, 1, 1)]
    await r.close()
    const again = open(db) // a reopened replica has no tail yet: its reads come from the store
    await again.open()
    const fromStore = [await again.readLog(0, 0, 100), await again.readLog(1, 0, 100)]
    expect(fromTail[0]).toHaveLength(24)
    expect(fromTail[1]).toHaveLength(3)
    expect(fromTail).toEqual(fromStore)
    expect(paged).toEqual([await again.readLog(0, 2, 3), await again.readLog(1, 1, 1)])
  })

  it('reads past the tail from the store', async () => {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    const r = open(db)
    await r.open()
    const total = 1500 // more than a tail keeps
    for (let i = 0; i < total; i += 100)
      await Promise.all(Array.from({ length: 100 }, (_, j) => r.write(`k${i + j}`, '1', HLC_ZERO)))
    const all = await r.readLog(0, 0, total)
    expect(all.map((e) => e.idx)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
    expect(all.every((e, i) => e.key === `k${i}`)).toBe(true)
  })

  it('a follower applying the tail of its leader stores the same log', async () => {
    const leader = open(new MemoryLevel<string, string>({ storeEncoding: 'utf8' }))
    const followerDb = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    const follower = open(followerDb, 1)
    await leader.open()
    await follower.open()
    for (let i = 0; i < 30; i++) await leader.write(`k${i % 4}`, `${i}`, HLC_ZERO)
    await follower.apply(await leader.readLog(0, 0, 1000))
    expect(follower.sv()).toEqual([30, 0])
    expect((await follower.read('k1')).version?.value).toBe('29')
    const expected = await leader.readLog(0, 0, 1000)
    await follower.close()
    const reopened = open(followerDb, 1)
    await reopened.open()
    expect(await reopened.readLog(0, 0, 1000)).toEqual(expected)
  })
})
