/**
 * Micro-benchmark: `has` on a 100k-element set against a plain key read, side by side, on one
 * LevelDB replica in process (memory-level, and classic-level on disk), then through the region
 * service (replica choice and the signed context, as the bigsets suite's storage level), plus
 * the cost of signing and checking a context. Not a test (vitest runs `*.test.ts` only):
 *
 *   npx tsc -b gateway && npx tsx gateway/test/storage/set-has.micro.ts [--size 100000] [--rounds 8]
 *
 * Each pair runs in interleaved rounds (has, read, has, read, ...) of a fixed number of calls;
 * it prints the median over rounds of the mean µs per call, and the ratio `has / read`. On a
 * shared machine, compare the ratios, not the absolute numbers.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { HLC_ZERO } from '@causeway/core'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { ContextTokens } from '../../src/cluster/set-contexts.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '8' },
    calls: { type: 'string', default: '3000' },
  },
})
const SIZE = Number(values.size)
const ROUNDS = Number(values.rounds)
const CALLS = Number(values.calls)
const BULK = 1000
const SET = 'micro:set'

const element = (i: number) => ((i * 2654435761) >>> 0).toString(36).padStart(7, '0')

type Case = (i: number) => unknown

/** Runs the cases in interleaved rounds; prints each one's median µs per call. */
async function compare(label: string, cases: Record<string, Case>): Promise<void> {
  const rounds = new Map<string, number[]>()
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [name, run] of Object.entries(cases)) {
      const start = process.hrtime.bigint()
      for (let i = 0; i < CALLS; i++) await run(round * CALLS + i)
      const us = Number(process.hrtime.bigint() - start) / CALLS / 1000
      if (round > 0) rounds.set(name, [...(rounds.get(name) ?? []), us]) // round 0 warms up
    }
  }
  const medians = new Map<string, number>()
  for (const [name, list] of rounds) {
    const sorted = list.sort((a, b) => a - b)
    medians.set(name, sorted[sorted.length >> 1]!)
    const range = `${sorted[0]!.toFixed(1)}-${sorted.at(-1)!.toFixed(1)}`
    console.log(
      `${`${label} ${name}`.padEnd(28)} ${medians.get(name)!.toFixed(1).padStart(7)} µs  (rounds ${range})`,
    )
  }
  const has = medians.get('has')
  const read = medians.get('read')
  if (has !== undefined && read !== undefined)
    console.log(`${label}: has / read = ${(has / read).toFixed(2)}×`)
}

async function filled(replica: LevelPartitionReplica): Promise<void> {
  await replica.open()
  for (let i = 0; i < SIZE; i += BULK) {
    const elements = Array.from({ length: Math.min(BULK, SIZE - i) }, (_, j) => ({
      element: element(i + j),
    }))
    await replica.sets.write(SET, { op: 'add', elements }, HLC_ZERO)
  }
  await replica.write('micro:key', 'value', HLC_ZERO)
}

async function atReplica(label: string, replica: LevelPartitionReplica): Promise<void> {
  await filled(replica)
  await compare(label, {
    has: async (i) => {
      const m = await replica.sets.has(SET, element((i * 7919) % SIZE))
      if (m.dots.length === 0) throw new Error('an element of the set was not found')
    },
    read: () => replica.read('micro:key'),
  })
}

async function throughService(): Promise<void> {
  const cluster = await EmbeddedCluster.start({ regions: 1, partitions: 1, replicas: 1 })
  try {
    const service = cluster.service(0)
    const sets = service.sets!
    const common = { partition: 0, dt: HLC_ZERO, durability: 'leader', level: 'eventual' } as const
    for (let i = 0; i < SIZE; i += BULK) {
      const elements = Array.from({ length: Math.min(BULK, SIZE - i) }, (_, j) => ({
        element: element(i + j),
      }))
      await sets.write({ ...common, name: SET, op: 'add', elements, timeoutMs: 5_000 })
    }
    await service.write({ ...common, key: 'micro:key', value: '"value"' })
    const read = { partition: 0, replica: 'leader', timeoutMs: 5_000, level: 'eventual' } as const
    await compare('service', {
      has: async (i) => {
        const r = await sets.has({ ...read, name: SET, element: element((i * 7919) % SIZE) })
        if (!r.found) throw new Error('an element of the set was not found')
      },
      read: () => service.read({ ...read, key: 'micro:key' }),
    })
  } finally {
    await cluster.close()
  }
}

const memory = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2 })
await atReplica('memory-level', memory)
await memory.close()

const location = await mkdtemp(join(tmpdir(), 'causeway-micro-'))
try {
  const disk = new LevelPartitionReplica({
    region: 0,
    partition: 0,
    replica: 0,
    regions: 2,
    location,
    sync: false,
  })
  await atReplica('classic-level', disk)
  await disk.close()
} finally {
  await rm(location, { recursive: true, force: true })
}

await throughService()

const tokens = new ContextTokens()
const dots = [{ actor: 0, counter: 123456 }]
const token = tokens.issue(SET, 'x', dots)
await compare('context', {
  issue: (i) => tokens.issue(SET, element(i % SIZE), dots),
  verify: () => tokens.verify(SET, 'x', token),
})
