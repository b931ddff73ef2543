import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type TxWrite,
  decodeCommitWrites,
  encodeCommitWrites,
  sortWrites,
} from '../src/commit-writes.js'
import { checkLogEntry } from '../src/log-entry-check.js'
import { checkNamespaces, hasTransactions, isTransactionalKey } from '../src/namespaces.js'
import { partitionOf } from '../src/partitioner.js'
import { Session } from '../src/session.js'
import { checkReadSet, writesByPartition } from '../src/transaction.js'

describe('commit writes', () => {
  const write = fc.tuple(
    fc.string({ minLength: 1, maxLength: 6 }).filter((k) => k.isWellFormed()),
    fc.option(
      fc.json().map((j) => JSON.stringify(JSON.parse(j))),
      { nil: undefined },
    ),
  )

  it('encode sorted, distinct writes to text that decodes back to them (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(write, { selector: ([k]) => k, minLength: 1 }), (writes) => {
        const sorted = sortWrites(writes as TxWrite[])
        expect(sorted.map(([k]) => k)).toEqual([...sorted.map(([k]) => k)].sort())
        const text = encodeCommitWrites(sorted)
        expect(decodeCommitWrites(text)).toEqual(sorted)
        // One text per set of writes, whatever order they came in.
        expect(encodeCommitWrites(sortWrites([...writes].reverse() as TxWrite[]))).toBe(text)
      }),
    )
  })

  it('refuse a key written twice, and decode nothing malformed', () => {
    expect(() =>
      sortWrites([
        ['a', '1'],
        ['a', '2'],
      ]),
    ).toThrow(/twice/)
    for (const text of [
      '',
      '[]',
      '{}',
      '[["b","1"],["a","1"]]',
      '[["a"],["a"]]',
      '[[""]]',
      '[["a",""]]',
      '[["a",1]]',
      '[["a","1","x"]]',
      '[["\\ud800"]]',
    ])
      expect(() => decodeCommitWrites(text), text).toThrow(
        expect.objectContaining({ code: 'INVALID_REQUEST' }),
      )
  })

  it('make commit log entries whose key is the first key written', () => {
    const head = { kind: 'commit', origin: 0, idx: 3, ts: '0000000000000001', at: 1, tid: 7 }
    const writes = '[["a","1"],["b"]]'
    const entry = checkLogEntry({ ...head, key: 'a', writes }, 2)
    expect(entry).toMatchObject({ kind: 'commit', tid: 7, writes, key: 'a' })
    expect(Object.isFrozen(entry)).toBe(true)
    expect(() => checkLogEntry({ ...head, key: 'b', writes }, 2)).toThrow(/first key/)
    expect(() => checkLogEntry({ ...head, key: 'a', writes, tid: 0 }, 2)).toThrow(/tid/)
    const relayed = checkLogEntry({ ...head, key: 'a', writes, relay: [1, 4, 9] }, 2)
    expect(relayed).toMatchObject({ relay: [1, 4, 9] })
    // A relay names another region's transaction.
    expect(() => checkLogEntry({ ...head, key: 'a', writes, relay: [0, 4, 9] }, 2)).toThrow(/relay/)
    expect(() =>
      checkLogEntry(
        { kind: 'put', origin: 0, idx: 1, key: 'a', ts: head.ts, at: 1, value: '1', tid: 1 },
        2,
      ),
    ).toThrow(/no tid/)
  })
})

describe('read sets', () => {
  it('are [key, tid] pairs, each key once, each tid at most the snapshot', () => {
    expect(
      checkReadSet(
        [
          ['b', 3],
          ['a', 0],
        ],
        5,
      ),
    ).toEqual([
      ['a', 0],
      ['b', 3],
    ])
    for (const bad of [
      {},
      [['a']],
      [['a', 1, 2]],
      [['', 1]],
      [[1, 1]],
      [['a', -1]],
      [['a', 1.5]],
      [['a', '1']],
      [['a', 6]],
      [
        ['a', 1],
        ['a', 2],
      ],
    ])
      expect(() => checkReadSet(bad, 5), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_READ_SET' }),
      )
  })
})

describe('transactional namespaces', () => {
  it('are last-writer-wins namespaces marked transactions: true', () => {
    const ns = checkNamespaces({ acct: { transactions: true }, cart: { conflicts: 'siblings' } })
    expect(ns['acct']).toEqual({ conflicts: 'lww', transactions: true })
    expect(isTransactionalKey('acct:1', ns)).toBe(true)
    expect(isTransactionalKey('cart:1', ns)).toBe(false)
    expect(isTransactionalKey('acct', ns)).toBe(false)
    expect(hasTransactions(ns)).toBe(true)
    expect(hasTransactions(checkNamespaces({ cart: { conflicts: 'siblings' } }))).toBe(false)
    expect(() => checkNamespaces({ a: { conflicts: 'siblings', transactions: true } })).toThrow(
      /last-writer-wins/,
    )
    expect(() => checkNamespaces({ a: { transactions: 'yes' } })).toThrow(/true or false/)
    expect(checkNamespaces({ a: { conflicts: 'lww', transactions: false } })['a']).toEqual({
      conflicts: 'lww',
    })
  })

  it('split a transaction’s writes by partition', () => {
    const writes: TxWrite[] = ['a', 'b', 'c', 'd', 'e'].map((k) => [k, '1'])
    const parts = writesByPartition(writes, 3)
    for (const [p, group] of parts) for (const [k] of group) expect(partitionOf(k, 3)).toBe(p)
    expect([...parts.values()].flat()).toHaveLength(5)
  })
})

describe('session tids', () => {
  const scope = { cluster: 'c', regions: 2, partitions: 4 }

  it('keep the highest tid per region, survive JSON and merge by max', () => {
    const s = new Session(scope)
    expect(s.tid(1)).toBe(0)
    expect(s.toJSON().t).toBeUndefined()
    s.observeTid(1, 7)
    s.observeTid(1, 3)
    expect(s.tid(1)).toBe(7)
    const restored = Session.fromJSON(JSON.stringify(s), scope)
    expect(restored.tid(1)).toBe(7)
    const other = new Session(scope)
    other.observeTid(0, 4)
    other.merge(restored)
    expect([other.tid(0), other.tid(1)]).toEqual([4, 7])
    expect(() => Session.fromJSON({ ...s.toJSON(), t: [1] })).toThrow(
      expect.objectContaining({ code: 'INVALID_SESSION' }),
    )
  })
})
