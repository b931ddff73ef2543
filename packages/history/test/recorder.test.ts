import { CausewayError } from '@causeway/core'
import { describe, expect, it } from 'vitest'
import { HistoryRecorder, type KvClient } from '../src/index.js'

/** A client whose replies and failures the test scripts. */
function scripted(): KvClient & { fail?: unknown } {
  const db: KvClient & { fail?: unknown } = {
    async get(key, o) {
      if (db.fail) throw db.fail
      // Served by the home region (1) after a fallback, whatever was asked.
      return key === 'none'
        ? { found: false, region: 1 }
        : {
            found: true,
            value: { a: 1 },
            ts: '0000000000010000',
            dc: 0,
            region: o.region === 2 ? 1 : o.region,
          }
    },
    async put(_key, _value, o) {
      if (db.fail) throw db.fail
      return { ts: '0000000000020000', dc: o.region, idx: 7, region: o.region }
    },
    async delete(_key, o) {
      return { ts: '0000000000030000', dc: o.region, idx: 8 }
    },
  }
  return db
}

describe('HistoryRecorder', () => {
  it('records each call with its interval, level, serving region and reply', async () => {
    let t = 0
    const recorder = new HistoryRecorder({ now: () => (t += 10) })
    const db = recorder.wrap('c1', scripted())
    expect(await db.put('k', 'v', { write: 'session', region: 0 })).toMatchObject({ idx: 7 })
    await db.get('k', { read: 'monotonic-reads', region: 2 })
    await db.get('none', { read: 'eventual', region: 0 })
    await db.delete('k', { write: 'eventual', region: 1 })
    expect(recorder.operations).toEqual([
      {
        client: 'c1',
        op: 'put',
        key: 'k',
        value: 'v',
        level: 'session',
        region: 0,
        invokedAt: 10,
        completedAt: 20,
        ok: true,
        reply: { ts: '0000000000020000', dc: 0, idx: 7 },
      },
      {
        client: 'c1',
        op: 'get',
        key: 'k',
        level: 'monotonic-reads',
        region: 1,
        invokedAt: 30,
        completedAt: 40,
        ok: true,
        reply: { found: true, value: { a: 1 }, ts: '0000000000010000', dc: 0 },
      },
      {
        client: 'c1',
        op: 'get',
        key: 'none',
        level: 'eventual',
        region: 1,
        invokedAt: 50,
        completedAt: 60,
        ok: true,
        reply: { found: false },
      },
      {
        client: 'c1',
        op: 'delete',
        key: 'k',
        level: 'eventual',
        region: 1,
        invokedAt: 70,
        completedAt: 80,
        ok: true,
        reply: { ts: '0000000000030000', dc: 1, idx: 8 },
      },
    ])
  })

  it('records a failure with its code and rethrows it', async () => {
    const recorder = new HistoryRecorder()
    const inner = scripted()
    const db = recorder.wrap(3, inner)
    inner.fail = new CausewayError('SESSION_NOT_AVAILABLE', 'no replica in time')
    await expect(db.get('k', { read: 'session', region: 1 })).rejects.toBe(inner.fail)
    inner.fail = new TypeError('boom')
    await expect(db.put('k', 1, { write: 'session', region: 0 })).rejects.toThrow('boom')
    const [read, write] = recorder.operations
    expect(read).toMatchObject({
      client: 3,
      op: 'get',
      region: 1,
      ok: false,
      error: { code: 'SESSION_NOT_AVAILABLE', message: 'no replica in time' },
    })
    expect(read).not.toHaveProperty('reply')
    expect(write).toMatchObject({ op: 'put', value: 1, ok: false, error: { code: 'TypeError' } })
    expect(read!.completedAt).toBeGreaterThanOrEqual(read!.invokedAt)
  })

  it('appends calls in the order they settle, and builds a history with a final state', async () => {
    const recorder = new HistoryRecorder()
    const slow: KvClient = {
      ...scripted(),
      get: async (key, o) => {
        await new Promise((r) => setTimeout(r, key === 'slow' ? 30 : 1))
        return { found: false, region: o.region }
      },
    }
    const db = recorder.wrap('c', slow)
    await Promise.all([
      db.get('slow', { read: 'session', region: 0 }),
      db.get('fast', { read: 'session', region: 0 }),
    ])
    expect(recorder.operations.map((o) => o.key)).toEqual(['fast', 'slow'])
    const h = recorder.history({ fast: [undefined] })
    expect(h.final).toEqual({ fast: [undefined] })
    expect(h.operations).toHaveLength(2)
    expect(recorder.history()).not.toHaveProperty('final')
  })
})
