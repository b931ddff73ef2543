/**
 * How the session is kept in the local store (`session-store.ts`): a write saves its partition's
 * row, the whole session is saved now and then and drops the rows it holds, and loading joins
 * them, so no saved row is lost and a forgotten partition stays forgotten.
 */
import { Session } from '@causeway/core'
import { MemoryLevel } from 'memory-level'
import { describe, expect, it } from 'vitest'
import { LocalStore } from '../src/offline/local-store.js'
import { openStore } from '../src/offline/opened-store.js'
import type { PersistStore } from '../src/offline/outbox-types.js'
import {
  SESSION_ROW_PREFIX,
  SessionSaver,
  joinStoredSession,
} from '../src/offline/session-store.js'

const scope = { cluster: 'c', regions: 2, partitions: 8 }
const ts = (n: number) => n.toString(16).padStart(16, '0')

async function reopen(db: MemoryLevel): Promise<Session> {
  const opened = await openStore(db as unknown as PersistStore, false)
  return Session.fromJSON(opened.session, scope)
}

describe('the stored session', () => {
  it('rows saved by writes after the whole session are joined on load', async () => {
    const db = new MemoryLevel()
    const local = new LocalStore(db as unknown as PersistStore)
    await local.open()
    const session = new Session(scope)
    const saver = new SessionSaver(session)
    session.observeRead(1, { dc: 0, idx: 4, ts: ts(4), epoch: 1 })
    await local.commit(saver.whole().changes)
    // Writes after it, each saving only its partition's row.
    session.observeWrite(1, { dc: 1, idx: 7, ts: ts(9), epoch: 1 })
    await local.commit(saver.rows([1]))
    session.observeWrite(5, { dc: 0, idx: 3, ts: ts(12), epoch: 2 })
    await local.commit(saver.rows([5]))
    const row = (await local.entries('meta', { prefix: SESSION_ROW_PREFIX })).map(([k]) => k)
    expect(row).toEqual([SESSION_ROW_PREFIX + 1, SESSION_ROW_PREFIX + 5])

    const restored = await reopen(db)
    expect(restored.toJSON()).toEqual(session.toJSON())
    expect(restored.dtW).toBe(ts(12))
  })

  it('a whole save drops the rows it holds: a partition forgotten since stays forgotten', async () => {
    const db = new MemoryLevel()
    const local = new LocalStore(db as unknown as PersistStore)
    await local.open()
    const session = new Session(scope)
    const saver = new SessionSaver(session)
    session.observeWrite(3, { dc: 0, idx: 2, ts: ts(2), epoch: 1 })
    await local.commit(saver.rows([3]))
    session.forget(3)
    await local.commit(saver.whole().changes)
    expect(await local.entries('meta', { prefix: SESSION_ROW_PREFIX })).toEqual([])
    expect((await reopen(db)).row(3)).toBeUndefined()
  })

  it('rows without a whole session (a first run killed early) restore the session', () => {
    const session = new Session(scope)
    session.observeWrite(2, { dc: 1, idx: 9, ts: ts(3), epoch: 1 })
    const changes = new SessionSaver(session).rows([2])
    const value = (key: string) => changes.find((c) => c.key === key && c.type === 'put')
    const joined = joinStoredSession({
      whole: undefined,
      head: (value('session-head') as { value: unknown }).value,
      rows: [[SESSION_ROW_PREFIX + 2, (value(SESSION_ROW_PREFIX + 2) as { value: unknown }).value]],
    })
    expect(Session.fromJSON(joined, scope).toJSON()).toEqual(session.toJSON())
  })

  it('damaged rows are left out; the whole session stands', () => {
    const whole = new Session(scope)
    whole.observeWrite(0, { dc: 0, idx: 1, ts: ts(1), epoch: 1 })
    const head = { v: 1, cluster: 'c', regions: 2, partitions: 8, dtR: ts(0), dtW: ts(0) }
    const joined = joinStoredSession({
      whole: whole.toJSON(),
      head,
      rows: [[SESSION_ROW_PREFIX + 1, { e: 1, r: [1], w: 'x' }]],
    })
    expect(joined).toEqual(whole.toJSON())
  })
})
