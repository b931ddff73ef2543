/**
 * The compliance suite of the sets of a {@link AbstractPartitionReplica} (`replica.sets`), run by every
 * storage backend next to `replica-compliance.ts`, with the same store factories:
 * `setCompliance('level: memory-level', factory)`.
 *
 * Like the replica suite, every test runs on a fresh replica and on a reopened one, where
 * `restart()` closes and reopens the replica so that checks run on what was persisted.
 */
import {
  HLC_ZERO,
  deltaFromJSON,
  deltaToJSON,
  hlcFrom,
  type Dot,
  type Hlc,
  type SetEntry,
} from '@causeway/core'
import { describe, expect, it } from 'vitest'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'
import type { AbstractSetReplica } from '../../src/storage/abstract-set-replica.js'
import type { LogEntry, SetOpEntry } from '../../src/storage/partition-replica.js'
import type { OpRef, ReplicaWrite } from '../../src/storage/op-records.js'
import { entry, setEntry, ship } from '../support/log-entries.js'
import { complianceReplicas } from './compliance-replicas.js'
import type { ReplicaStoreFactory } from './replica-compliance.js'

const REGIONS = 3

/** The sets of a replica (every backend has them). */
export function setsOf(r: AbstractPartitionReplica): AbstractSetReplica {
  if (!r.supports.sets) throw new Error(`${r.backend} has no sets`)
  return r.sets
}

/** Every element of a set, with its dots, in order. */
export async function entriesOf(r: AbstractPartitionReplica, name: string): Promise<SetEntry[]> {
  const out: SetEntry[] = []
  for await (const e of setsOf(r).scan(name)) out.push(e)
  return out
}

/** Every element of a set, in order. */
export async function elementsOf(r: AbstractPartitionReplica, name: string): Promise<string[]> {
  return (await entriesOf(r, name)).map((e) => e.element)
}

const add = (r: AbstractPartitionReplica, name: string, ...elements: string[]) =>
  setsOf(r).write(name, { op: 'add', elements: elements.map((element) => ({ element })) }, HLC_ZERO)

const remove = (r: AbstractPartitionReplica, name: string, ...elements: string[]) =>
  setsOf(r).write(
    name,
    { op: 'remove', elements: elements.map((element) => ({ element })) },
    HLC_ZERO,
  )

const removeCtx = (r: AbstractPartitionReplica, name: string, element: string, ctx: Dot[]) =>
  setsOf(r).write(name, { op: 'remove', elements: [{ element, ctx }] }, HLC_ZERO)

/** A set entry as another region's leader would ship it. */
function shipped(origin: number, idx: number, name: string, delta: unknown, ts?: Hlc): SetOpEntry {
  return setEntry(origin, idx, name, JSON.stringify(delta), ts ?? hlcFrom(Date.now(), idx))
}

const addDelta = (element: string, actor: number, counter: number, ctx: [number, number][] = []) =>
  ({ v: 1, adds: [{ e: element, dot: [actor, counter], ctx }], removes: [] }) as const

const removeDelta = (element: string, ctx: [number, number][]) =>
  ({ v: 1, adds: [], removes: [{ e: element, ctx }] }) as const

export function setCompliance(name: string, factory: ReplicaStoreFactory): void {
  describe.each(['fresh', 'reopened'] as const)(`${name} sets (%s replica)`, (mode) => {
    const { fresh, restart } = complianceReplicas(factory, mode, REGIONS)

    it('starts empty', async () => {
      const r = await fresh()
      expect(await elementsOf(r, 's')).toEqual([])
      expect(await setsOf(r).size('s')).toEqual({
        size: 0,
        stamp: { seen: [0, 0, 0], ts: HLC_ZERO },
      })
      expect((await setsOf(r).has('s', 'x')).dots).toEqual([])
    })

    it('adds elements as one log entry that advances sv and the stamp', async () => {
      let r = await fresh()
      const e = await add(r, 's', 'b', 'a', 'c')
      expect(e).toMatchObject({ origin: 0, idx: 1, key: 's' })
      expect(deltaFromJSON(JSON.parse(e.setDelta)).adds.map((a) => a.element)).toEqual([
        'b',
        'a',
        'c',
      ])
      r = await restart(r)
      expect(r.sv()).toEqual([1, 0, 0])
      expect(await elementsOf(r, 's')).toEqual(['a', 'b', 'c'])
      const has = await setsOf(r).has('s', 'a')
      expect(has.dots).toEqual([{ actor: 0, counter: 2 }])
      expect(has.stamp).toEqual({ seen: [1, 0, 0], ts: e.ts })
      expect((await setsOf(r).size('s')).size).toBe(3)
      const [logged] = await r.readLog(0, 0, 10)
      expect(logged).toEqual(e)
    })

    it('keeps sets, keys and their names apart', async () => {
      let r = await fresh()
      await add(r, 's', 'x')
      await add(r, 's2', 'y')
      await add(r, 's\u0000', 'z')
      await r.write('s', '"a key"', HLC_ZERO)
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual(['x'])
      expect(await elementsOf(r, 's2')).toEqual(['y'])
      expect(await elementsOf(r, 's\u0000')).toEqual(['z'])
      expect((await r.read('s')).version?.value).toBe('"a key"')
      // The stamp counts set entries of this set only.
      expect((await setsOf(r).size('s')).stamp.seen).toEqual([1, 0, 0])
      expect((await setsOf(r).size('s2')).stamp.seen).toEqual([2, 0, 0])
    })

    it('orders elements by code point, with any characters', async () => {
      let r = await fresh()
      const elements = ['b', '', 'a\u0000', 'a', '\uffff', '😀', 'é', 'a\u0000b', 'x'.repeat(1024)]
      await add(r, 's', ...elements)
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual([
        '',
        'a',
        'a\u0000',
        'a\u0000b',
        'b',
        'x'.repeat(1024),
        'é',
        '\uffff',
        '😀',
      ])
      for (const e of elements) expect((await setsOf(r).has('s', e)).dots).toHaveLength(1)
      expect((await setsOf(r).size('s')).size).toBe(elements.length)
    })

    it('scans from, after and up to a limit', async () => {
      const r = await fresh()
      await add(r, 's', 'a', 'b', 'c', 'd', 'e')
      const scan = async (options: object) => {
        const out: string[] = []
        for await (const e of setsOf(r).scan('s', options)) out.push(e.element)
        return out
      }
      expect(await scan({ from: 'b', limit: 2 })).toEqual(['b', 'c'])
      expect(await scan({ after: 'b', limit: 2 })).toEqual(['c', 'd'])
      expect(await scan({ from: 'bb' })).toEqual(['c', 'd', 'e'])
      expect(await scan({ after: 'e' })).toEqual([])
      expect(await scan({ limit: 0 })).toEqual([])
    })

    it('reports after a scan a stamp that covers what it returned', async () => {
      const r = await fresh()
      const a = await add(r, 's', 'a')
      const scan = setsOf(r).scan('s')
      const seen: string[] = []
      for await (const e of scan) seen.push(e.element)
      expect(seen).toEqual(['a'])
      expect(await scan.stamp()).toEqual({ seen: [1, 0, 0], ts: a.ts })
    })

    it('re-adding an element keeps one insertion of it (the add supersedes the live one)', async () => {
      let r = await fresh()
      await add(r, 's', 'x')
      const again = await add(r, 's', 'x')
      const delta = deltaFromJSON(JSON.parse(again.setDelta))
      expect(delta.adds[0]).toEqual({
        element: 'x',
        dot: { actor: 0, counter: 2 },
        ctx: [{ actor: 0, counter: 1 }],
      })
      r = await restart(r)
      expect((await setsOf(r).has('s', 'x')).dots).toEqual([{ actor: 0, counter: 2 }])
      expect((await setsOf(r).size('s')).size).toBe(1)
    })

    it('removes what the leader observes for an element sent without a context', async () => {
      let r = await fresh()
      await add(r, 's', 'x', 'y')
      const e = await remove(r, 's', 'x', 'nope')
      expect(deltaFromJSON(JSON.parse(e.setDelta)).removes).toEqual([
        { element: 'x', ctx: [{ actor: 0, counter: 1 }] },
      ])
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual(['y'])
      expect((await setsOf(r).size('s')).size).toBe(1)
      expect(r.sv()).toEqual([2, 0, 0])
    })

    it('removes only the observed context: an add the remover had not seen survives', async () => {
      let r = await fresh()
      // Region 1 added x under (1,1), which this replica has; the remover saw only that.
      await r.receive(ship(1, [shipped(1, 1, 's', addDelta('x', 1, 1))]))
      // Region 2's concurrent add of x, (2,1), arrives before the remove is written.
      await r.receive(ship(2, [shipped(2, 1, 's', addDelta('x', 2, 1))]))
      await removeCtx(r, 's', 'x', [{ actor: 1, counter: 1 }])
      r = await restart(r)
      expect(await entriesOf(r, 's')).toEqual([{ element: 'x', dots: [{ actor: 2, counter: 1 }] }])
      expect((await setsOf(r).size('s')).size).toBe(1)
    })

    it('removes an observed add that has not arrived yet, for good', async () => {
      let r = await fresh()
      // The client saw (1,1) in region 1 and removes it here before it was shipped.
      await removeCtx(r, 's', 'x', [{ actor: 1, counter: 1 }])
      await r.receive(ship(1, [shipped(1, 1, 's', addDelta('x', 1, 1))]))
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual([])
      expect((await setsOf(r).size('s')).size).toBe(0)
      expect(r.sv()).toEqual([1, 1, 0])
    })

    it('applies shipped deltas idempotently and stops at a gap', async () => {
      let r = await fresh()
      const entries = [
        shipped(1, 1, 's', addDelta('a', 1, 1)),
        shipped(1, 2, 's', addDelta('b', 1, 2)),
        shipped(1, 3, 's', removeDelta('a', [[1, 1]])),
      ]
      expect(await r.receive(ship(1, entries.slice(0, 2)))).toBe(2)
      expect(await r.receive(ship(1, entries))).toBe(3)
      expect(await r.receive(ship(1, entries))).toBe(3)
      expect(await r.receive(ship(1, [shipped(1, 5, 's', addDelta('z', 1, 5))]))).toBe(3)
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual(['b'])
      expect((await setsOf(r).size('s')).size).toBe(1)
      expect((await setsOf(r).size('s')).stamp.seen).toEqual([0, 3, 0])
      expect((await r.readLog(1, 0, 10)).map((e) => (e as SetOpEntry).setDelta)).toEqual(
        entries.map((e) => e.setDelta),
      )
    })

    it('mixes set and key entries in one shipped batch, in order', async () => {
      let r = await fresh()
      const ts = hlcFrom(Date.now(), 0)
      const batch: LogEntry[] = [
        entry(1, 1, 'k', '1', ts),
        shipped(1, 2, 's', addDelta('a', 1, 1)),
        entry(1, 3, 'k', '2', hlcFrom(Date.now(), 3)),
        shipped(1, 4, 's', addDelta('b', 1, 2)),
      ]
      expect(await r.receive(ship(1, batch))).toBe(4)
      r = await restart(r)
      expect(await elementsOf(r, 's')).toEqual(['a', 'b'])
      expect((await r.read('k')).version?.value).toBe('2')
      expect((await r.readLog(1, 0, 10)).map((e) => e.idx)).toEqual([1, 2, 3, 4])
    })

    it('follows a leader log with apply (per origin, any order of origins)', async () => {
      const leader = await fresh(0)
      await add(leader, 's', 'a', 'b')
      await leader.receive(ship(1, [shipped(1, 1, 's', addDelta('c', 1, 1))]))
      await remove(leader, 's', 'a')
      const follower = await fresh(0)
      const log = [...(await leader.readLog(1, 0, 10)), ...(await leader.readLog(0, 0, 10))]
      await follower.apply(log)
      await follower.apply(log)
      expect(follower.sv()).toEqual([2, 1, 0])
      expect(await entriesOf(follower, 's')).toEqual(await entriesOf(leader, 's'))
      expect(await setsOf(follower).size('s')).toEqual(await setsOf(leader).size('s'))
    })

    it('converges with a concurrent add and remove of the same element: add wins', async () => {
      const r0 = await fresh(0)
      const r1 = await fresh(1)
      await add(r0, 's', 'x')
      await r1.receive(ship(0, await r0.readLog(0, 0, 10)))
      // r0 removes x while r1 re-adds it: the re-add supersedes (0,1) but not what r0 removes.
      await remove(r0, 's', 'x')
      await add(r1, 's', 'x')
      await r1.receive(ship(0, await r0.readLog(0, 0, 10)))
      await r0.receive(ship(1, await r1.readLog(1, 0, 10)))
      for (const r of [r0, r1]) {
        expect(await entriesOf(r, 's')).toEqual([
          { element: 'x', dots: [{ actor: 1, counter: 1 }] },
        ])
        expect((await setsOf(r).size('s')).size).toBe(1)
      }
    })

    it('takes concurrent writes to one set one at a time', async () => {
      let r = await fresh()
      const writes = await Promise.all(
        Array.from({ length: 40 }, (_, i) => add(r, 's', `e${i % 20}`)),
      )
      expect(writes.map((w) => w.idx).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 40 }, (_, i) => i + 1),
      )
      r = await restart(r)
      expect((await setsOf(r).size('s')).size).toBe(20)
      const entries = await entriesOf(r, 's')
      expect(entries).toHaveLength(20)
      // Each re-add superseded the one before it: one live insertion per element.
      for (const e of entries) expect(e.dots).toHaveLength(1)
    })

    it('streams its set-clock and entries for a merge of replicas', async () => {
      const r = await fresh()
      await add(r, 's', 'a', 'b')
      const stream = await setsOf(r).stream('s', { after: 'a' })
      expect(stream.clock.vv.get(0)).toBe(2)
      const out: SetEntry[] = []
      for await (const e of stream.entries) out.push(e)
      expect(out).toEqual([{ element: 'b', dots: [{ actor: 0, counter: 2 }] }])
      expect((await stream.stamp()).seen).toEqual([1, 0, 0])
    })

    it('refuses bad writes before taking an idx', async () => {
      const r = await fresh()
      const bad = [
        { op: 'add', elements: [] },
        { op: 'add', elements: [{ element: 'x'.repeat(1025) }] },
        { op: 'add', elements: [{ element: '\ud800' }] },
        { op: 'add', elements: Array.from({ length: 1001 }, (_, i) => ({ element: `e${i}` })) },
      ] as const
      for (const write of bad) {
        await expect(setsOf(r).write('s', write, HLC_ZERO)).rejects.toMatchObject({
          code: 'INVALID_ELEMENT',
        })
      }
      await expect(
        setsOf(r).write('s', { op: 'add', elements: [{ element: 'x' }] }, 'nope' as Hlc),
      ).rejects.toMatchObject({ code: 'INVALID_HLC' })
      expect(r.sv()).toEqual([0, 0, 0])
      expect(await r.readLog(0, 0, 10)).toEqual([])
    })

    it('refuses a batch with a malformed set entry and applies none of it', async () => {
      const r = await fresh()
      const batch = [
        shipped(1, 1, 's', addDelta('a', 1, 1)),
        { ...shipped(1, 2, 's', {}), setDelta: '{"v":1,"adds":[{"e":7}],"removes":[]}' },
      ]
      await expect(r.receive(ship(1, batch))).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
      expect(r.sv()).toEqual([0, 0, 0])
      expect(await elementsOf(r, 's')).toEqual([])
    })

    it('refuses bad names, elements, contexts, options and dependency times before anything', async () => {
      const r = await fresh()
      const sets = setsOf(r)
      const add = (elements: unknown) =>
        ({ op: 'add', elements }) as unknown as Parameters<typeof sets.write>[1]
      const refusals: [string, () => Promise<unknown>, string][] = [
        ['empty name', () => sets.write('', add([{ element: 'a' }]), HLC_ZERO), 'INVALID_KEY'],
        ['name with a lone surrogate', () => sets.has('s\ud800', 'a'), 'INVALID_KEY'],
        ['no elements', () => sets.write('s', add([]), HLC_ZERO), 'INVALID_ELEMENT'],
        [
          'element not text',
          () => sets.write('s', add([{ element: 7 }]), HLC_ZERO),
          'INVALID_ELEMENT',
        ],
        [
          'bad context',
          () =>
            sets.write('s', add([{ element: 'a', ctx: [{ actor: -1, counter: 1 }] }]), HLC_ZERO),
          'INVALID_CONTEXT',
        ],
        [
          'unknown operation',
          () => sets.write('s', { op: 'toggle', elements: [{ element: 'a' }] } as never, HLC_ZERO),
          'INVALID_REQUEST',
        ],
        ['bad dt', () => sets.write('s', add([{ element: 'a' }]), 'x' as Hlc), 'INVALID_HLC'],
        ['has: element not text', () => sets.has('s', 7 as unknown as string), 'INVALID_ELEMENT'],
        ['size: empty name', () => sets.size(''), 'INVALID_KEY'],
        [
          'stream: from and after',
          () => sets.stream('s', { from: 'a', after: 'b' }),
          'INVALID_OPTION',
        ],
        ['scan: negative limit', async () => sets.scan('s', { limit: -1 }), 'INVALID_OPTION'],
        [
          'scan: from and after',
          async () => sets.scan('s', { from: 'a', after: 'b' }),
          'INVALID_OPTION',
        ],
      ]
      for (const [label, call, code] of refusals)
        await expect(call(), label).rejects.toMatchObject({ code })
      expect(r.sv()).toEqual([0, 0, 0])
      expect(await r.readLog(0, 0, 10)).toEqual([])
      expect((await sets.size('s')).size).toBe(0)
    })

    describe('operation ids', () => {
      const op = (id: string, fingerprint = 'fp-a'): OpRef => ({
        namespace: 'tags',
        id,
        fingerprint,
      })
      const adds = (...elements: string[]): ReplicaWrite => ({
        kind: 'set',
        name: 'tags:1',
        write: { op: 'add', elements: elements.map((element) => ({ element })) },
      })

      it('applies a set write once and answers a repeat with its first record, also after a restart', async () => {
        let r = await fresh()
        const first = await r.writeOnce(op('client-01.1'), adds('red'), HLC_ZERO)
        if (!('entry' in first)) throw new Error('the first call must apply the write')
        expect(first.entry).toMatchObject({ origin: 0, idx: 1, key: 'tags:1' })
        expect(first.record).toMatchObject({ idx: 1, ts: first.entry.ts })
        r = await restart(r)
        expect(await r.writeOnce(op('client-01.1'), adds('red'), HLC_ZERO)).toEqual({
          replayed: first.record,
        })
        // An add applied twice would mint a second dot (and supersede the first).
        expect(await entriesOf(r, 'tags:1')).toEqual([
          { element: 'red', dots: [{ actor: 0, counter: 1 }] },
        ])
        expect(r.sv()).toEqual([1, 0, 0])
        await expect(
          r.writeOnce(op('client-01.1', 'fp-b'), adds('blue'), HLC_ZERO),
        ).rejects.toMatchObject({ code: 'OP_ID_REUSED' })
      })

      it('applies concurrent duplicate set writes once', async () => {
        const r = await fresh()
        const outcomes = await Promise.all(
          Array.from({ length: 6 }, () => r.writeOnce(op('client-01.2'), adds('a', 'b'), HLC_ZERO)),
        )
        expect(outcomes.filter((o) => 'entry' in o)).toHaveLength(1)
        expect(r.sv()).toEqual([1, 0, 0])
        expect((await setsOf(r).size('tags:1')).size).toBe(2)
        const remove: ReplicaWrite = {
          kind: 'set',
          name: 'tags:1',
          write: { op: 'remove', elements: [{ element: 'a' }] },
        }
        const removed = await r.writeOnce(op('client-01.3'), remove, HLC_ZERO)
        expect('entry' in removed).toBe(true)
        expect('replayed' in (await r.writeOnce(op('client-01.3'), remove, HLC_ZERO))).toBe(true)
        expect(await elementsOf(r, 'tags:1')).toEqual(['b'])
      })
    })

    it('round-trips what it ships: the delta of a write is a valid delta', async () => {
      const r = await fresh()
      const e = await add(r, 's', 'a')
      const delta = deltaFromJSON(JSON.parse(e.setDelta))
      expect(JSON.parse(e.setDelta)).toEqual(deltaToJSON(delta))
    })
  })
}
