/**
 * The bigset against riak_dt's ORSWOT: the reference's eunit vectors, then model-based property
 * tests where three replicas take random adds, removes, compactions and deliveries (duplicated,
 * reordered) and must match the reference model step by step and converge.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  addDots,
  clockActors,
  clocksEqual,
  clockToJSON,
  freshClock,
  isEmptyClock,
} from '../../src/bigset/clock.js'
import type { BigsetDelta } from '../../src/bigset/delta.js'
import { compareDots, type Dot } from '../../src/bigset/dot.js'
import { compareElements } from '../../src/bigset/element.js'
import { BigsetKeys } from '../../src/bigset/keys.js'
import { KvBigset, type KvBigsetOptions } from '../../src/bigset/kv-bigset.js'
import { MemoryOrderedKv } from '../../src/bigset/memory-kv.js'
import type { SetEntry } from '../../src/bigset/reads.js'
import { mergeElementDots, mergeReplicaStreams } from '../../src/bigset/replica-merge.js'
import { OrswotModel } from './orswot-model.js'

const keys = BigsetKeys.forSet('s', 'bs/')
const dot = (actor: number, counter: number): Dot => ({ actor, counter })

async function entriesOf(set: KvBigset): Promise<SetEntry[]> {
  const out: SetEntry[] = []
  for await (const e of set.scan()) out.push({ element: e.element, dots: [...e.dots] })
  return out
}
async function valueOf(set: KvBigset): Promise<string[]> {
  return (await entriesOf(set)).map((e) => e.element)
}

/** A replica under test: a bigset in its own store, and the model fed the same operations. */
class Replica {
  readonly set: KvBigset
  readonly model = new OrswotModel()
  readonly actor: number
  readonly #supersede: boolean

  constructor(actor: number, options: KvBigsetOptions = {}) {
    this.actor = actor
    this.set = new KvBigset(new MemoryOrderedKv(), keys, options)
    this.#supersede = options.supersedeLocal === true
  }

  async add(element: string, ctx: readonly Dot[] = []): Promise<Message> {
    const plan = await this.set.insert(this.actor, [{ element, ctx }])
    const { dot: modelDot, delta } = this.model.add(this.actor, element, ctx, this.#supersede)
    expect(plan.added[0]!.dot).toEqual(modelDot)
    return { delta: plan.delta, model: delta }
  }

  async remove(element: string, ctx: readonly Dot[]): Promise<Message> {
    const plan = await this.set.remove([{ element, ctx }])
    return { delta: plan.delta, model: this.model.remove(element, ctx) }
  }

  async receive(message: Message): Promise<void> {
    await this.set.apply(message.delta)
    this.model.merge(message.model)
  }

  /** The bigset replica holds exactly the model replica's state: entries and clock. */
  async expectMatchesModel(): Promise<void> {
    expect(await entriesOf(this.set)).toEqual(this.model.state())
    const modelClock = addDots(freshClock(), this.model.contextDots())
    expect(clockToJSON((await this.set.clocks()).clock)).toEqual(clockToJSON(modelClock))
    expect(await this.set.size()).toBe(this.model.value().length)
  }
}

interface Message {
  delta: BigsetDelta
  model: OrswotModel
}

describe('bigset vs riak_dt ORSWOT eunit vectors', () => {
  it('disjoint_merge: a remove at A leaves the element B added', async () => {
    const [a, b, c] = [new Replica(1), new Replica(2), new Replica(3)]
    const addBar = await a.add('bar')
    const addBaz = await b.add('baz')
    await c.receive(addBar)
    await c.receive(addBaz)
    const removeBar = await a.remove('bar', await a.set.has('bar'))
    await c.receive(removeBar)
    expect(await valueOf(c.set)).toEqual(['baz'])
    await a.receive(addBaz)
    expect(await valueOf(a.set)).toEqual(['baz'])
  })

  it("dead_node_update: a remove with another replica's context removes what it saw, and not B's add", async () => {
    const a = new Replica(0)
    const b = new Replica(1)
    const addA = await a.add('A')
    await b.receive(addA)
    const addB = await b.add('B')
    const removeA = await a.remove('A', await b.set.has('A'))
    expect(await valueOf(a.set)).toEqual([])
    await a.receive(addB)
    await b.receive(removeA)
    expect(await valueOf(a.set)).toEqual(['B'])
    expect(await valueOf(b.set)).toEqual(['B'])
  })

  it('batch_order: remove then add, and add then a stale remove, both keep the element', async () => {
    const a = new Replica(0)
    await a.set.insert(0, [{ element: 'bar' }, { element: 'baz' }])
    await a.set.remove([{ element: 'baz', ctx: await a.set.has('baz') }])
    await a.set.insert(0, [{ element: 'baz' }])
    expect(await valueOf(a.set)).toEqual(['bar', 'baz'])
    const stale = await a.set.has('baz')
    await a.set.insert(0, [{ element: 'baz', ctx: stale }])
    await a.set.remove([{ element: 'baz', ctx: stale }])
    expect(await valueOf(a.set)).toEqual(['bar', 'baz'])
  })

  it('stat: add foo@1, foo@2, bar@3, remove foo -> 3 actors, 1 element, 1 dot per element', async () => {
    const set = new KvBigset(new MemoryOrderedKv(), keys, { supersedeLocal: true })
    await set.insert(1, [{ element: 'foo' }])
    await set.insert(2, [{ element: 'foo' }])
    await set.insert(3, [{ element: 'bar' }])
    expect(await set.has('foo')).toEqual([dot(2, 1)]) // riak: a re-add replaces the element's dots
    await set.remove([{ element: 'foo', ctx: await set.has('foo') }])
    expect(clockActors((await set.clocks()).clock)).toHaveLength(3)
    const entries = await entriesOf(set)
    expect(entries).toHaveLength(1)
    expect(Math.max(...entries.map((e) => e.dots.length))).toBe(1)
  })

  it("remove 'X' ctx [{b,1}] on an empty set, then add X@b: nothing, and the clock {b,1}", async () => {
    const r = new Replica(0)
    await r.remove('X', [dot(1, 1)])
    const b = new Replica(1)
    await r.receive(await b.add('X'))
    expect(await valueOf(r.set)).toEqual([])
    const { clock, tombstone } = await r.set.clocks()
    expect(clockToJSON(clock)).toEqual({ vv: [[1, 1]], cloud: [] })
    expect(isEmptyClock(tombstone)).toBe(true)
    await r.expectMatchesModel()
  })

  it('merge(add Z@a, add Z@b) keeps both dots', async () => {
    const a = new Replica(0)
    const b = new Replica(1)
    const za = await a.add('Z')
    const zb = await b.add('Z')
    await a.receive(zb)
    await b.receive(za)
    for (const r of [a, b]) {
      expect(await entriesOf(r.set)).toEqual([{ element: 'Z', dots: [dot(0, 1), dot(1, 1)] }])
      expect(clockToJSON((await r.set.clocks()).clock)).toEqual({
        vv: [
          [0, 1],
          [1, 1],
        ],
        cloud: [],
      })
    }
  })
})

// ---- model-based properties ------------------------------------------------------------------

const ELEMENTS = ['a', 'b', 'a\u0000', '\uffff', '😀']
const REPLICAS = 3

type Step =
  | { kind: 'add'; at: number; element: number; ctxFrom: number | null; drop: number }
  | { kind: 'remove'; at: number; element: number; ctxFrom: number; drop: number }
  | { kind: 'deliver'; pick: number; duplicate: boolean }
  | { kind: 'compact'; at: number }
  | { kind: 'read'; from: number | null; limit: number }

const replica = fc.integer({ min: 0, max: REPLICAS - 1 })
const element = fc.integer({ min: 0, max: ELEMENTS.length - 1 })
const drop = fc.integer({ min: 0, max: 7 }) // bit i drops the i-th observed dot: partial contexts
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      at: replica,
      element,
      ctxFrom: fc.option(replica, { nil: null }),
      drop,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('remove' as const),
      at: replica,
      element,
      ctxFrom: replica,
      drop,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      pick: fc.nat(),
      duplicate: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('compact' as const), at: replica }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      from: fc.option(element, { nil: null }),
      limit: fc.integer({ min: 1, max: 6 }),
    }),
  },
)
const arbOptions = fc.record({
  supersedeLocal: fc.boolean(),
  trackSize: fc.boolean(),
  removal: fc.constantFrom('tombstone' as const, 'delete' as const),
})

interface Pending extends Message {
  to: number
}

/** Runs a schedule; returns the replicas and the history (every add dot, every context dot). */
async function run(steps: readonly Step[], options: KvBigsetOptions) {
  const replicas = Array.from({ length: REPLICAS }, (_, i) => new Replica(i, options))
  const pending: Pending[] = []
  const adds: { element: string; dot: Dot }[] = []
  const contexts: Dot[] = []
  const ship = (from: number, message: Message) => {
    for (let to = 0; to < REPLICAS; to++) if (to !== from) pending.push({ ...message, to })
  }
  const observe = async (from: number, el: string, dropMask: number) =>
    (await replicas[from]!.set.has(el)).filter((_, i) => (dropMask & (1 << i)) === 0)

  for (const step of steps) {
    if (step.kind === 'add') {
      const el = ELEMENTS[step.element]!
      const ctx = step.ctxFrom === null ? [] : await observe(step.ctxFrom, el, step.drop)
      const message = await replicas[step.at]!.add(el, ctx)
      const added = message.delta.adds[0]!
      adds.push({ element: el, dot: added.dot })
      contexts.push(...added.ctx)
      ship(step.at, message)
    } else if (step.kind === 'remove') {
      const el = ELEMENTS[step.element]!
      const ctx = await observe(step.ctxFrom, el, step.drop)
      const message = await replicas[step.at]!.remove(el, ctx)
      contexts.push(...ctx)
      if (message.delta.removes.length > 0) ship(step.at, message)
    } else if (step.kind === 'deliver') {
      if (pending.length === 0) continue
      const i = step.pick % pending.length
      const message = pending[i]!
      if (!step.duplicate) pending.splice(i, 1)
      await replicas[message.to]!.receive(message)
    } else if (step.kind === 'compact') {
      await replicas[step.at]!.set.compact({ batchSize: 2 })
    } else {
      await expectQuorumRead(
        replicas,
        step.from === null ? undefined : ELEMENTS[step.from]!,
        step.limit,
      )
    }
    for (const r of replicas) await r.expectMatchesModel()
  }
  return { replicas, pending, adds, contexts }
}

/** A merged read of all replicas equals the model's join of their states. */
async function expectQuorumRead(replicas: Replica[], from: string | undefined, limit: number) {
  const joined = new OrswotModel()
  for (const r of replicas) joined.merge(r.model.clone())
  const expected = joined
    .state()
    .filter((e) => from === undefined || compareElements(e.element, from) >= 0)
    .slice(0, limit)
  const streams = await Promise.all(replicas.map((r) => r.set.replicaEntries({ from })))
  const merged: SetEntry[] = []
  for await (const e of mergeReplicaStreams(streams, { limit }))
    merged.push({ element: e.element, dots: [...e.dots] })
  expect(merged).toEqual(expected)
  for (const el of ELEMENTS) {
    const views = await Promise.all(replicas.map((r) => r.set.replicaHas(el)))
    expect(mergeElementDots(views)).toEqual(joined.dotsOf(el))
  }
}

describe('bigset vs reference ORSWOT model (properties)', () => {
  it('three replicas match the model at every step and converge after any delivery order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbStep, { maxLength: 45 }), arbOptions, async (steps, options) => {
        const { replicas, pending, adds, contexts } = await run(steps, options)
        // Deliver whatever is still in flight, then every replica holds the same set.
        for (const message of pending.splice(0)) await replicas[message.to]!.receive(message)
        const final = await entriesOf(replicas[0]!.set)
        for (const r of replicas) {
          await r.expectMatchesModel()
          expect(await entriesOf(r.set)).toEqual(final)
          expect(
            clocksEqual((await r.set.clocks()).clock, (await replicas[0]!.set.clocks()).clock),
          ).toBe(true)
        }
        // The OR-set specification: a dot survives iff no operation's context observed it.
        const observed = new Set(contexts.map((d) => `${d.actor}.${d.counter}`))
        const survivors = new Map<string, Dot[]>()
        for (const a of adds) {
          if (observed.has(`${a.dot.actor}.${a.dot.counter}`)) continue
          survivors.set(a.element, [...(survivors.get(a.element) ?? []), a.dot].sort(compareDots))
        }
        const spec = [...survivors]
          .map(([el, dots]) => ({ element: el, dots }))
          .sort((x, y) => compareElements(x.element, y.element))
        expect(final).toEqual(spec)
      }),
      { numRuns: 150 },
    )
  }, 20_000)

  it('concurrent add and remove of the same element: add wins, in any delivery order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(fc.nat(), { minLength: 4, maxLength: 12 }),
        arbOptions,
        async (addSeesOld, order, options) => {
          const replicas = Array.from({ length: REPLICAS }, (_, i) => new Replica(i, options))
          const first = await replicas[0]!.add('x')
          for (const to of [1, 2]) await replicas[to]!.receive(first)
          // Concurrently: replica 1 removes what it saw; replica 2 adds x again.
          const removal = await replicas[1]!.remove('x', await replicas[1]!.set.has('x'))
          const readd = await replicas[2]!.add(
            'x',
            addSeesOld ? await replicas[2]!.set.has('x') : [],
          )
          const inFlight: Pending[] = [
            { ...removal, to: 0 },
            { ...removal, to: 2 },
            { ...readd, to: 0 },
            { ...readd, to: 1 },
          ]
          // Deliver in a random order, with random duplicates, then everything once more.
          for (const pick of order)
            await replicas[inFlight[pick % 4]!.to]!.receive(inFlight[pick % 4]!)
          for (const message of inFlight) await replicas[message.to]!.receive(message)
          for (const r of replicas) {
            expect(await r.set.has('x')).toEqual([dot(2, 1)])
            await r.expectMatchesModel()
          }
        },
      ),
      { numRuns: 100 },
    )
  })

  it('a remove never removes an add it did not observe', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: replica, deliverTo: fc.subarray([0, 1, 2]) }), {
          minLength: 1,
          maxLength: 8,
        }),
        replica,
        arbOptions,
        async (addPlan, remover, options) => {
          const replicas = Array.from(
            { length: REPLICAS },
            (_, i) => new Replica(i, { ...options, supersedeLocal: false }),
          )
          const late: Pending[] = []
          const added: Dot[] = []
          for (const { at, deliverTo } of addPlan) {
            const message = await replicas[at]!.add('x')
            added.push(message.delta.adds[0]!.dot)
            for (let to = 0; to < REPLICAS; to++) {
              if (to === at) continue
              if (deliverTo.includes(to)) await replicas[to]!.receive(message)
              else late.push({ ...message, to })
            }
          }
          const observed = await replicas[remover]!.set.has('x')
          const removal = await replicas[remover]!.remove('x', observed)
          for (const message of late) await replicas[message.to]!.receive(message)
          for (let to = 0; to < REPLICAS; to++)
            if (to !== remover) await replicas[to]!.receive({ ...removal })
          const unobserved = added
            .filter((d) => !observed.some((o) => compareDots(o, d) === 0))
            .sort(compareDots)
          for (const r of replicas) {
            expect(await r.set.has('x')).toEqual(unobserved)
            await r.expectMatchesModel()
          }
        },
      ),
      { numRuns: 100 },
    )
  })
})
