/**
 * The transactional part of the storage contract (`supports.multiVersionReads`): `commit`,
 * `readAsOf`, `collectGarbage`, relays and `commit` log entries, run by every backend that
 * declares it, on a fresh and on a reopened replica (as `replica-compliance.ts`).
 */
import {
  type CommitEntry,
  type Hlc,
  type TxWrite,
  commitEntry,
  encodeCommitWrites,
  hlcFrom,
} from '@causeway/core'
import { describe, expect, it } from 'vitest'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'
import type { TxCommit } from '../../src/storage/partition-replica.js'
import { complianceReplicas } from './compliance-replicas.js'
import type { ReplicaStoreFactory } from './replica-compliance.js'
import { ship } from '../support/log-entries.js'

const REGIONS = 3

/** An HLC `ms` milliseconds from now, counter `c`. */
function tsIn(ms: number, c = 0): Hlc {
  return hlcFrom(Date.now() + ms, c)
}

function commit(tid: number, ts: Hlc, writes: Record<string, string | undefined>): TxCommit {
  const list = Object.entries(writes).sort(([a], [b]) => (a < b ? -1 : 1)) as TxWrite[]
  return { tid, ts, writes: list }
}

export function txCompliance(name: string, factory: ReplicaStoreFactory): void {
  describe.each(['fresh', 'reopened'] as const)(`${name}: transactions (%s replica)`, (mode) => {
    const { fresh, restart } = complianceReplicas(factory, mode, REGIONS)

    async function valuesAt(r: AbstractPartitionReplica, tid: number, keys: string[]) {
      const { versions } = await r.readAsOf(tid, keys)
      return versions.map((v) => (v === undefined ? null : v.deleted ? '-' : v.value))
    }

    it('declares it', async () => {
      const r = await fresh()
      expect(r.supports.multiVersionReads).toBe(true)
      expect(r.committedTid()).toBe(0)
      expect(r.txFloor()).toBe(0)
    })

    it('commits a transaction’s writes as one log entry of its tid and ts', async () => {
      let r = await fresh()
      const ts = tsIn(0)
      const [made] = await r.commit([commit(4, ts, { b: '2', a: '1' })])
      expect(made).toEqual(
        commitEntry(
          { origin: 0, idx: 1, key: 'a', ts, at: made!.at },
          4,
          encodeCommitWrites([
            ['a', '1'],
            ['b', '2'],
          ]),
        ),
      )
      expect(r.sv()).toEqual([1, 0, 0])
      expect(r.committedTid()).toBe(4)
      r = await restart(r)
      expect(await r.readLog(0, 0, 10)).toEqual([made])
      expect(r.committedTid()).toBe(4)
      // A later plain write takes the next idx and a later ts.
      const plain = await r.write('p', '1', '0000000000000000')
      expect(plain.idx).toBe(2)
      expect(plain.ts > ts).toBe(true)
    })

    it('keeps versions by tid: a read at a snapshot sees the newest version at most that tid', async () => {
      let r = await fresh()
      await r.commit([commit(1, tsIn(0, 1), { a: '"a1"' })])
      await r.commit([
        commit(3, tsIn(0, 2), { a: '"a3"', b: '"b3"' }),
        commit(5, tsIn(0, 3), { a: undefined }),
      ])
      r = await restart(r)
      expect(await valuesAt(r, 0, ['a', 'b'])).toEqual([null, null])
      expect(await valuesAt(r, 1, ['a', 'b'])).toEqual(['"a1"', null])
      expect(await valuesAt(r, 2, ['a', 'b'])).toEqual(['"a1"', null])
      expect(await valuesAt(r, 3, ['a', 'b'])).toEqual(['"a3"', '"b3"'])
      expect(await valuesAt(r, 4, ['b', 'a'])).toEqual(['"b3"', '"a3"'])
      expect(await valuesAt(r, 9, ['a', 'b', 'c'])).toEqual(['-', '"b3"', null])
      const { versions, sv } = await r.readAsOf(4, ['a'], { values: false })
      expect(versions).toEqual([{ tid: 3, ts: expect.any(String), dc: 0, deleted: false }])
      expect(sv).toEqual([3, 0, 0])
    })

    it('is idempotent: a tid committed before is not applied again, its entry is returned', async () => {
      let r = await fresh()
      const first = await r.commit([commit(2, tsIn(0, 1), { a: '1' })])
      r = await restart(r)
      const again = await r.commit([
        commit(2, tsIn(0, 1), { a: '1' }),
        commit(3, tsIn(0, 2), { a: '3' }),
      ])
      expect(again[0]).toEqual(first[0])
      expect(again[1]).toMatchObject({ idx: 2, tid: 3 })
      expect(r.sv()).toEqual([2, 0, 0])
      expect(await r.commit([commit(3, tsIn(0, 2), { a: '3' })])).toEqual([again[1]])
      expect(await valuesAt(r, 3, ['a'])).toEqual(['3'])
    })

    it('refuses malformed commits before anything is applied', async () => {
      const r = await fresh()
      const ts = tsIn(0)
      for (const [label, bad, code] of [
        [
          'tids out of order',
          [commit(3, ts, { a: '1' }), commit(2, ts, { a: '1' })],
          'INVALID_REQUEST',
        ],
        ['tid 0', [commit(0, ts, { a: '1' })], 'INVALID_REQUEST'],
        ['no writes', [{ tid: 1, ts, writes: [] }], 'INVALID_REQUEST'],
        [
          'keys out of order',
          [
            {
              tid: 1,
              ts,
              writes: [
                ['b', '1'],
                ['a', '1'],
              ],
            },
          ],
          'INVALID_REQUEST',
        ],
        ['empty key', [{ tid: 1, ts, writes: [['', '1']] }], 'INVALID_KEY'],
        ['empty value', [{ tid: 1, ts, writes: [['a', '']] }], 'INVALID_VALUE'],
        ['bad ts', [{ tid: 1, ts: 'x', writes: [['a', '1']] }], 'INVALID_HLC'],
        [
          'relay of itself',
          [{ ...commit(1, ts, { a: '1' }), relay: [0, 1, 1] }],
          'INVALID_REQUEST',
        ],
      ] as const)
        await expect(r.commit(bad as unknown as TxCommit[]), label).rejects.toMatchObject({ code })
      await expect(r.readAsOf(-1, ['a'])).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
      await expect(r.readAsOf(1, [''])).rejects.toMatchObject({ code: 'INVALID_KEY' })
      expect(r.sv()).toEqual([0, 0, 0])
      expect(await r.readLog(0, 0, 10)).toEqual([])
    })

    it('only logs another region’s commit entries; a relay makes them visible, by (ts, dc)', async () => {
      let r = await fresh()
      const old = tsIn(-1000)
      const foreign: CommitEntry = commitEntry(
        { origin: 1, idx: 1, key: 'a', ts: old, at: Date.now() },
        7,
        encodeCommitWrites([['a', '"from 1"']]),
      )
      await r.receive(ship(1, [foreign]))
      expect(r.sv()).toEqual([0, 1, 0])
      expect(await r.readLog(1, 0, 10)).toEqual([foreign])
      expect(await valuesAt(r, 100, ['a'])).toEqual([null])
      // A session that saw the entry must wait for its relay; one that did not need not.
      expect(await r.visibleAt([0, 1, 0])).toBeUndefined()
      expect(await r.visibleAt([5, 0, 5])).toBe(0)
      r = await restart(r)
      expect(await r.visibleAt([0, 1, 0])).toBeUndefined()
      // This region's own newer version wins over the relay of an older one.
      await r.commit([commit(2, tsIn(0), { a: '"mine"', b: '"mine"' })])
      const [relayed] = await r.commit([{ ...commit(3, old, { a: '"from 1"' }), relay: [1, 7, 1] }])
      expect(relayed).toMatchObject({ origin: 0, tid: 3, ts: old, relay: [1, 7, 1] })
      // Visible from the relay's snapshot on; this region's own commit (idx 1 or 2) from its tid.
      expect(await r.visibleAt([0, 1, 0])).toBe(3)
      expect(await r.visibleAt([r.sv()[0]! - 1, 0, 0])).toBe(2)
      expect(await valuesAt(r, 3, ['a'])).toEqual(['"mine"'])
      // A newer relay wins, as a version of its region.
      await r.commit([{ ...commit(4, tsIn(60_000), { b: '"from 2"' }), relay: [2, 1, 1] }])
      r = await restart(r)
      // After a restart, a bound: at most the newest committed tid.
      expect(await r.visibleAt([0, 1, 0])).toBeLessThanOrEqual(4)
      expect(await r.visibleAt([0, 1, 0])).toBeGreaterThanOrEqual(3)
      const { versions } = await r.readAsOf(4, ['b'])
      expect(versions[0]).toMatchObject({ tid: 4, dc: 2, value: '"from 2"' })
      expect(r.committedTid()).toBe(4)
    })

    it('does not wait for a relay of another region’s relay: its own transaction is visible, a third region’s once relayed here (issue 22.7)', async () => {
      let r = await fresh()
      await r.commit([commit(5, tsIn(0), { a: '"mine"' })])
      // Region 1 relays this region's transaction 5 (its commit entry idx 1 here), then region 2's
      // transaction 4 (region 2's commit entry idx 2).
      const echo = commitEntry(
        { origin: 1, idx: 1, key: 'a', ts: tsIn(0, 1), at: Date.now() },
        3,
        encodeCommitWrites([['a', '"mine"']]),
        [0, 5, 1],
      )
      const third = commitEntry(
        { origin: 1, idx: 2, key: 'b', ts: tsIn(0, 2), at: Date.now() },
        4,
        encodeCommitWrites([['b', '"from 2"']]),
        [2, 4, 2],
      )
      await r.receive(ship(1, [echo, third]))
      expect(await r.visibleAt([0, 1, 0])).toBe(5)
      expect(await r.visibleAt([0, 2, 0])).toBeUndefined()
      r = await restart(r)
      expect(await r.visibleAt([0, 2, 0])).toBeUndefined()
      // Once this region relays region 2's commit entry, the third region's relay is visible too.
      await r.commit([{ ...commit(6, tsIn(0, 3), { b: '"from 2"' }), relay: [2, 4, 2] }])
      expect(await r.visibleAt([0, 2, 0])).toBe(6)
      r = await restart(r)
      expect(await r.visibleAt([0, 2, 0])).toBe(6)
      expect(await r.visibleAt([0, 1, 0])).toBeGreaterThanOrEqual(5)
      expect(await r.visibleAt([0, 1, 0])).toBeLessThanOrEqual(6)
    })

    it('applies commit entries of its own region from its leader’s log like the leader did', async () => {
      const leader = await fresh()
      const made = [
        ...(await leader.commit([commit(1, tsIn(0, 1), { a: '1', b: '1' })])),
        await leader.write('plain', '1', '0000000000000000'),
        ...(await leader.commit([commit(2, tsIn(0, 2), { a: '2' })])),
      ]
      let follower = await fresh()
      await follower.apply(made)
      follower = await restart(follower)
      expect(follower.sv()).toEqual([3, 0, 0])
      expect(follower.committedTid()).toBe(2)
      expect(await valuesAt(follower, 1, ['a', 'b'])).toEqual(['1', '1'])
      expect(await valuesAt(follower, 2, ['a', 'b'])).toEqual(['2', '1'])
    })

    it('collects versions no snapshot from the floor on sees, and refuses reads below it', async () => {
      let r = await fresh()
      for (let tid = 1; tid <= 6; tid++)
        await r.commit([commit(tid, tsIn(0, tid), { a: String(tid) })])
      await r.collectGarbage(4)
      expect(r.txFloor()).toBe(4)
      await expect(r.readAsOf(3, ['a'])).rejects.toMatchObject({ code: 'SNAPSHOT_TOO_OLD' })
      r = await restart(r, true)
      expect(r.txFloor()).toBe(4)
      await expect(r.readAsOf(3, ['a'])).rejects.toMatchObject({
        code: 'SNAPSHOT_TOO_OLD',
        details: expect.objectContaining({ floor: 4 }),
      })
      expect(await valuesAt(r, 4, ['a'])).toEqual(['4'])
      expect(await valuesAt(r, 5, ['a'])).toEqual(['5'])
      expect(await valuesAt(r, 6, ['a'])).toEqual(['6'])
      // The floor never goes down.
      await r.collectGarbage(2)
      expect(r.txFloor()).toBe(4)
    })

    it('keeps plain writes and commits in one gapless log', async () => {
      const r = await fresh()
      const results = await Promise.all([
        r.write('x', '1', '0000000000000000'),
        r.commit([commit(1, tsIn(0), { a: '1' })]),
        r.write('y', '1', '0000000000000000'),
        r.commit([commit(2, tsIn(0, 1), { a: '2' }), commit(3, tsIn(0, 2), { b: '3' })]),
      ])
      const idx = results.flat().map((e) => e.idx)
      expect(idx.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5])
      expect((await r.readLog(0, 0, 10)).map((e) => e.kind)).toEqual([
        'put',
        'commit',
        'put',
        'commit',
        'commit',
      ])
    })
  })
}
