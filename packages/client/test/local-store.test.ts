/**
 * The local store: how a store's refusal reads as `STORAGE_FULL` (what browsers and Node give: a
 * DOMException named QuotaExceededError, with or without a message, wrapped by abstract-level or
 * not), group commit, changes that ride with the next batch, and reads of what is not written yet.
 */
import { MemoryLevel } from 'memory-level'
import { describe, expect, it } from 'vitest'
import { LocalStore, storageFull, type StoreChange } from '../src/offline/local-store.js'
import type { PersistBatchOp, PersistStore } from '../src/offline/outbox-types.js'

describe('storageFull', () => {
  it('a QuotaExceededError (Chromium: empty message) is a quota error that names itself', () => {
    const error = storageFull(new DOMException('', 'QuotaExceededError'))
    expect(error.code).toBe('STORAGE_FULL')
    expect(error.details).toMatchObject({ quota: true })
    expect(error.message).toBe('the local store is full (quota exceeded): QuotaExceededError')
  })

  it('wrapped by abstract-level (its cause): still a quota error', () => {
    const inner = new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    const wrapped = Object.assign(new Error('write failed', { cause: inner }), {
      code: 'LEVEL_DATABASE_NOT_OPEN',
    })
    expect(storageFull(wrapped).details).toMatchObject({
      quota: true,
      storeCode: 'LEVEL_DATABASE_NOT_OPEN',
    })
  })

  it('any other refusal (a full disk in Node) is STORAGE_FULL without quota', () => {
    const error = storageFull(Object.assign(new Error('IO error: No space left on device'), {}))
    expect(error.details).toMatchObject({ quota: false })
    expect(error.message).toBe(
      'the local store refused the write: IO error: No space left on device',
    )
  })
})

/** A memory-level store that counts its batches and can be made to refuse them. */
function countingStore(options: { getSync?: boolean } = {}) {
  const db = new MemoryLevel()
  const batches: PersistBatchOp[][] = []
  let refuse = false
  const batch = db.batch.bind(db) as unknown as (ops: PersistBatchOp[]) => Promise<void>
  Object.assign(db, {
    batch(ops: PersistBatchOp[]) {
      batches.push(ops)
      return refuse ? Promise.reject(new Error('IO error: No space left')) : batch(ops)
    },
  })
  // A store of an older abstract-level: no synchronous reads.
  if (options.getSync === false)
    Object.defineProperty(db, 'supports', { value: { ...db.supports, getSync: false } })
  return {
    local: new LocalStore(db as unknown as PersistStore),
    batches,
    refuse: (on: boolean) => (refuse = on),
  }
}

const put = (key: string, value: unknown): StoreChange => ({ type: 'put', in: 'cache', key, value })

describe('LocalStore', () => {
  for (const getSync of [true, false])
    it(`a change asked with commitSoon rides with the next batch of the turn, or is written alone after it (getSync ${getSync})`, async () => {
      const { local, batches } = countingStore({ getSync })
      await local.open()
      const soon = local.commitSoon([put('a', 1)])
      const now = local.commit([put('b', 2)])
      await Promise.all([soon, now])
      expect(batches).toHaveLength(1)
      expect(batches[0]!.map((op) => op.key)).toEqual(['a', 'b'])

      const alone = local.commitSoon([put('c', 3)])
      await Promise.resolve()
      expect(batches).toHaveLength(1) // not in this turn
      await alone
      expect(batches).toHaveLength(2)
      expect(await local.getMany('cache', ['a', 'b', 'c', 'd'])).toEqual([1, 2, 3, undefined])
    })

  it('reads see what was asked for before it is written; a refused batch is not read back', async () => {
    const { local, refuse } = countingStore()
    await local.open()
    await local.commit([put('k', 'stored')])
    refuse(true)
    const written = local.commit([put('k', 'asked'), { type: 'del', in: 'cache', key: 'gone' }])
    expect(await local.get('cache', 'k')).toBe('asked')
    expect(await local.getMany('cache', ['k', 'gone'])).toEqual(['asked', undefined])
    await expect(written).rejects.toMatchObject({ code: 'STORAGE_FULL' })
    expect(await local.get('cache', 'k')).toBe('stored')
  })

  it('a batch writes each entry once, its last change (the session saved by every applied op)', async () => {
    const { local, batches } = countingStore()
    await local.open()
    await Promise.all([
      local.commit([put('s', 1), put('x', 'x')]),
      local.commit([put('s', 2)]),
      local.commit([{ type: 'del', in: 'cache', key: 'x' }, put('s', 3)]),
    ])
    expect(batches).toHaveLength(1)
    expect(batches[0]!.map((op) => [op.type, op.key])).toEqual([
      ['del', 'x'],
      ['put', 's'],
    ])
    expect(await local.getMany('cache', ['s', 'x'])).toEqual([3, undefined])
  })

  it('flush writes what waits for the turn to end', async () => {
    const { local, batches } = countingStore()
    await local.open()
    void local.commitSoon([put('late', true)])
    await local.flush()
    expect(batches).toHaveLength(1)
  })
})
