/**
 * Property: the sets of real replicas (three LevelDB leaders, one per region) under random
 * interleavings of adds, removes (with the leader's observation or another region's context) and
 * FIFO deliveries of their logs behave exactly like a reference ORSWOT (riak_dt semantics, the
 * model of core's tests), replica by replica and dot by dot, and all converge once everything is
 * delivered.
 */
import { randomUUID } from 'node:crypto'
import { HLC_ZERO, type Dot } from '@causeway/core'
import fc from 'fast-check'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { OrswotModel } from '../../../packages/core/test/bigset/orswot-model.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'
import { RedisPartitionReplica } from '../../src/storage/redis/index.js'
import { ship } from '../support/log-entries.js'
import { type RedisServer, startRedis, stopAllRedis } from '../support/redis-server.js'
import { entriesOf, setsOf } from './set-compliance.js'

const REGIONS = 3
const ELEMENTS = ['a', 'b', 'c', '', 'é']
const SET = 's'

type Step =
  | { kind: 'add'; at: number; element: number }
  | { kind: 'remove'; at: number; element: number; ctxFrom: number | null }
  | { kind: 'deliver'; from: number; to: number; count: number }

const region = fc.integer({ min: 0, max: REGIONS - 1 })
const element = fc.integer({ min: 0, max: ELEMENTS.length - 1 })
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), at: region, element }),
  fc.record({
    kind: fc.constant('remove' as const),
    at: region,
    element,
    ctxFrom: fc.option(region, { nil: null }),
  }),
  fc.record({
    kind: fc.constant('deliver' as const),
    from: region,
    to: region,
    count: fc.integer({ min: 1, max: 3 }),
  }),
)

let redis: RedisServer | undefined
afterAll(stopAllRedis)

const BACKENDS: {
  name: string
  runs: number
  replica: (region: number, run: string) => AbstractPartitionReplica
}[] = [
  {
    name: 'level (memory)',
    runs: 60,
    replica: (region) =>
      new LevelPartitionReplica({ region, partition: 0, replica: 0, regions: REGIONS }),
  },
  {
    name: 'redis',
    runs: 40,
    replica: (region, run) =>
      new RedisPartitionReplica({
        url: redis!.url,
        namespace: `prop-${run}-r${region}`,
        region,
        partition: 0,
        replica: 0,
        regions: REGIONS,
      }),
  },
]

function againstTheModel(backend: (typeof BACKENDS)[number]): void {
  const open: AbstractPartitionReplica[] = []
  beforeAll(async () => {
    if (backend.name === 'redis') redis ??= await startRedis({ appendfsync: 'everysec' })
  })
  afterEach(async () => {
    for (const r of open.splice(0)) await r.close()
  })

  async function run(steps: Step[]): Promise<void> {
    const id = randomUUID()
    const replicas = await Promise.all(
      Array.from({ length: REGIONS }, async (_, d) => {
        const r = backend.replica(d, id)
        open.push(r)
        await r.open()
        return r
      }),
    )
    const models = replicas.map(() => new OrswotModel())
    // Each region's own deltas, in log order, for the model's deliveries.
    const deltas: OrswotModel[][] = replicas.map(() => [])

    const deliver = async (from: number, to: number, count: number) => {
      if (from === to) return
      const cursor = replicas[to]!.sv()[from]!
      const entries = await replicas[from]!.readLog(from, cursor, count)
      if (entries.length > 0) await replicas[to]!.receive(ship(from, entries))
      for (const delta of deltas[from]!.slice(cursor, cursor + entries.length))
        models[to]!.merge(delta)
    }

    try {
      for (const s of steps) {
        if (s.kind === 'deliver') {
          await deliver(s.from, s.to, s.count)
          continue
        }
        const r = replicas[s.at]!
        const model = models[s.at]!
        const e = ELEMENTS[s.element]!
        if (s.kind === 'add') {
          await setsOf(r).write(SET, { op: 'add', elements: [{ element: e }] }, HLC_ZERO)
          deltas[s.at]!.push(model.add(s.at, e, [], true).delta)
        } else {
          // The context of another region's view, or (null) the leader's own observation.
          const ctx: Dot[] | undefined =
            s.ctxFrom === null ? undefined : models[s.ctxFrom]!.dotsOf(e)
          await setsOf(r).write(SET, { op: 'remove', elements: [{ element: e, ctx }] }, HLC_ZERO)
          deltas[s.at]!.push(model.remove(e, ctx ?? model.dotsOf(e)))
        }
        expect(await entriesOf(r, SET)).toEqual(model.state())
      }
      // Deliver everything everywhere: every replica ends where the model does, all alike.
      for (let from = 0; from < REGIONS; from++)
        for (let to = 0; to < REGIONS; to++) await deliver(from, to, Number.MAX_SAFE_INTEGER)
      const final = models[0]!.state()
      for (const [d, r] of replicas.entries()) {
        expect(models[d]!.state()).toEqual(final)
        expect(await entriesOf(r, SET)).toEqual(final)
        expect((await setsOf(r).size(SET)).size).toBe(final.length)
      }
    } finally {
      for (const r of open.splice(0)) await r.close()
    }
  }

  it('agree with the model step by step and converge', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), run), {
      numRuns: backend.runs,
    })
  }, 60_000)

  it('keep add-wins for the textbook interleaving', async () => {
    await run([
      { kind: 'add', at: 0, element: 0 },
      { kind: 'deliver', from: 0, to: 1, count: 1 },
      // Region 1 removes what it saw while region 0 re-adds concurrently.
      { kind: 'remove', at: 1, element: 0, ctxFrom: null },
      { kind: 'add', at: 0, element: 0 },
      { kind: 'deliver', from: 1, to: 0, count: 1 },
    ])
  })
}

const TITLE = 'sets of real $name replicas against the ORSWOT model'
describe.each(BACKENDS.filter((b) => b.name !== 'redis'))(TITLE, againstTheModel)
describe.each(BACKENDS.filter((b) => b.name === 'redis'))(
  TITLE,
  { tags: ['redis'] },
  againstTheModel,
)
