import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CausewayError, HLC_ZERO } from '@causeway/core'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { dataKey, siblingsKey } from '../../src/storage/level/level-layout.js'
import { LevelPartitionReplica, type StringLevel } from '../../src/storage/level/level-replica.js'
import { type ReplicaStoreFactory, replicaCompliance } from './replica-compliance.js'
import { txCompliance } from './tx-compliance.js'
import { entry, ship } from '../support/log-entries.js'

// Damages a stored value in an open store, as a bad disk or an older version would.
function corrupter(db: StringLevel) {
  return (key: string, kind: 'siblings' | 'version', text: string) =>
    db.put(kind === 'siblings' ? siblingsKey(key) : dataKey(key), text)
}

const memoryStore: ReplicaStoreFactory = async (shape) => {
  const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
  return {
    replica: (options) => new LevelPartitionReplica({ ...shape, ...options, db }),
    corrupt: corrupter(db),
    destroy: async () => {},
  }
}

const classicStore: ReplicaStoreFactory = async (shape) => {
  const location = await mkdtemp(join(tmpdir(), 'causeway-replica-'))
  // One store object that every replica opens and closes again, so a test can reach its data.
  const db = new ClassicLevel<string, string>(location)
  return {
    replica: (options) => new LevelPartitionReplica({ ...shape, ...options, db }),
    corrupt: corrupter(db),
    destroy: async () => {
      if (db.status === 'open') await db.close()
      await rm(location, { recursive: true, force: true })
    },
  }
}

replicaCompliance('level: memory-level', memoryStore)
replicaCompliance('level: classic-level', classicStore)
txCompliance('level: memory-level', memoryStore)
txCompliance('level: classic-level', classicStore)

const HOUR = 3_600_000

describe('LevelPartitionReplica', () => {
  const shape = { region: 0, partition: 0, replica: 0, regions: 2 }
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  function memory(): { db: StringLevel; replica: () => LevelPartitionReplica } {
    const db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
    return {
      db,
      replica: () => {
        const r = new LevelPartitionReplica({ ...shape, db, onFailure: () => {} })
        cleanup.push(() => r.close())
        return r
      },
    }
  }

  it('commits concurrent writes in few durable batches', async () => {
    const location = await mkdtemp(join(tmpdir(), 'causeway-replica-'))
    cleanup.push(() => rm(location, { recursive: true, force: true }))
    const db = new ClassicLevel<string, string>(location)
    const r = new LevelPartitionReplica({ ...shape, db })
    cleanup.push(() => r.close())
    await r.open()
    let batches = 0
    db.on('write', () => batches++)
    const writes = await Promise.all(
      Array.from({ length: 300 }, (_, i) => r.write(`k${i}`, '1', HLC_ZERO)),
    )
    expect(writes.at(-1)!.idx).toBe(300)
    expect(batches).toBeLessThanOrEqual(3)
    expect(r.sv()).toEqual([300, 0])
  })

  it('fails loudly and stays consistent when a durable batch fails', async () => {
    const { db, replica } = memory()
    const failures: CausewayError[] = []
    const r = new LevelPartitionReplica({ ...shape, db, onFailure: (e) => failures.push(e) })
    cleanup.push(() => r.close())
    await r.open()
    const first = await r.write('k', '"kept"', HLC_ZERO)

    // The store's own write fails (under both array and chained batches).
    const store = db as unknown as { _batch: unknown }
    const batch = store._batch
    store._batch = () => Promise.reject(new Error('disk full'))
    const lost = r.write('k', '"lost"', HLC_ZERO)
    const alsoLost = r.write('j', '"lost"', HLC_ZERO)
    await expect(lost).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    await expect(alsoLost).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    expect(failures).toHaveLength(1)
    expect(failures[0]!.cause).toMatchObject({ message: 'disk full' })
    // Memory is not ahead of disk, and nothing more is accepted.
    expect(r.sv()).toEqual([1, 0])
    await expect(r.write('k', '"later"', HLC_ZERO)).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
    })
    await expect(r.read('k')).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    expect(await r.waitFor([2, 0], Date.now() + 1000)).toBe(false)

    store._batch = batch
    await r.close()
    const back = replica()
    await back.open()
    expect(back.sv()).toEqual([1, 0])
    expect((await back.read('k')).version?.value).toBe('"kept"')
    // No gap: the idx of the failed writes is handed out again.
    const next = await back.write('k', '"next"', HLC_ZERO)
    expect(next.idx).toBe(2)
    expect(next.ts > first.ts).toBe(true)
  })

  it('rejects malformed input before it reaches the queue', async () => {
    const { replica } = memory()
    const r = replica()
    await r.open()
    await expect(r.write('k', '1', 'not-an-hlc')).rejects.toMatchObject({ code: 'INVALID_HLC' })
    await expect(r.write('', '1', HLC_ZERO)).rejects.toMatchObject({ code: 'INVALID_KEY' })
    const good = entry(1, 1, 'k', '1', HLC_ZERO)
    await expect(r.receive(ship(0, [{ ...good, origin: 0 }]))).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    await expect(r.receive(ship(5, [{ ...good, origin: 5 }]))).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    const bad = { ...good, idx: 0 }
    await expect(r.receive(ship(1, [bad]))).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    await expect(r.apply([{ ...bad, idx: 1, ts: 'x' }])).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    })
    expect(r.sv()).toEqual([0, 0])
  })

  it('drops an idle client’s records at its next write and keeps its mark for ever', async () => {
    const { db } = memory()
    let now = Date.now()
    const r = new LevelPartitionReplica({ ...shape, db, now: () => now, opRetentionMs: HOUR })
    cleanup.push(() => r.close())
    await r.open()
    const op = (id: string) => ({ namespace: 'cart', id, fingerprint: 'fp' })
    const write = { kind: 'kv', key: 'cart:1', value: '1' } as const
    for (let i = 1; i <= 3; i++) await r.writeOnce(op(`client-01.${i}`), write, HLC_ZERO)
    const records = async () => (await db.keys({ gte: 'or/', lt: 'or0' }).all()).length
    const marks = async () => (await db.keys({ gte: 'oc/', lt: 'oc0' }).all()).length
    expect([await records(), await marks()]).toEqual([3, 1])
    now += 2 * HOUR
    // Idle past the window: what it sent is OP_EXPIRED at once, before anything is deleted.
    await expect(r.writeOnce(op('client-01.2'), write, HLC_ZERO)).rejects.toMatchObject({
      code: 'OP_EXPIRED',
    })
    expect(await records()).toBe(3)
    // Its next write deletes the old records in its batch; the mark stays, one per client.
    expect('entry' in (await r.writeOnce(op('client-01.4'), write, HLC_ZERO))).toBe(true)
    expect([await records(), await marks()]).toEqual([1, 1])
    expect('replayed' in (await r.writeOnce(op('client-01.4'), write, HLC_ZERO))).toBe(true)
    await expect(r.writeOnce(op('client-01.3'), write, HLC_ZERO)).rejects.toMatchObject({
      code: 'OP_EXPIRED',
      details: { remembered: 3 },
    })
    expect(r.sv()).toEqual([4, 0])
  })

  it('refuses a store made for another replica', async () => {
    const { db } = memory()
    const r = new LevelPartitionReplica({ ...shape, db })
    await r.open()
    await r.close()
    const other = new LevelPartitionReplica({ ...shape, partition: 1, db })
    await expect(other.open()).rejects.toThrow(/belongs to region 0, partition 0/)
  })
})
