/**
 * Micro-benchmark: `has` on a 100k-element set against a plain key read, on one LevelDB replica
 * in process (memory-level and classic-level on disk), side by side in one run, plus the cost of
 * signing the context `has` returns. Not a test (vitest runs `*.test.ts` only); run it with
 *
 *   npx tsx gateway/test/storage/set-has.micro.ts [--size 100000] [--time 1000]
 *
 * (`tsc -b gateway` first: the gateway's sources import the built `@causeway/core`.)
 * Prints mean and p99 µs per call and the ratio `has / read` per store.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { HLC_ZERO } from '@causeway/core'
import { Bench } from 'tinybench'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { ContextTokens } from '../../src/cluster/set-contexts.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '100000' },
    time: { type: 'string', default: '1000' },
  },
})
const SIZE = Number(values.size)
const TIME_MS = Number(values.time)
const BULK = 1000
const SET = 'micro:set'

const element = (i: number) => ((i * 2654435761) >>> 0).toString(36).padStart(7, '0')

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

async function measure(label: string, replica: LevelPartitionReplica): Promise<void> {
  await filled(replica)
  let i = 0
  const bench = new Bench({ time: TIME_MS, warmupTime: 200 })
  bench
    .add(`${label} has`, async () => {
      const m = await replica.sets.has(SET, element((i++ * 7919) % SIZE))
      if (m.dots.length === 0) throw new Error('an element of the set was not found')
    })
    .add(`${label} read`, async () => {
      await replica.read('micro:key')
    })
  await bench.run()
  report(bench)
}

function report(bench: Bench): void {
  const means = new Map<string, number>()
  for (const task of bench.tasks) {
    const r = task.result
    if (r === undefined || r.error !== undefined)
      throw new Error(`${task.name} did not run`, { cause: r?.error })
    means.set(task.name, r.mean)
    console.log(
      `${task.name.padEnd(24)} mean ${(r.mean * 1000).toFixed(1).padStart(7)} µs` +
        `  p50 ${(median(r.samples) * 1000).toFixed(1).padStart(7)} µs  p99 ${(r.p99 * 1000).toFixed(1).padStart(7)} µs  (${r.samples.length} calls)`,
    )
  }
  const names = [...means.keys()]
  const has = names.find((n) => n.endsWith(' has'))
  const read = names.find((n) => n.endsWith(' read'))
  if (has !== undefined && read !== undefined)
    console.log(
      `${has.slice(0, -4)}: has / read = ${(means.get(has)! / means.get(read)!).toFixed(2)}×`,
    )
}

// The same through the region service (as the bigsets suite's storage level): replica choice,
// vector checks and, for `has`, the signed context.
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
    let i = 0
    const bench = new Bench({ time: TIME_MS, warmupTime: 200 })
    bench
      .add('service has', async () => {
        const r = await sets.has({ ...read, name: SET, element: element((i++ * 7919) % SIZE) })
        if (!r.found) throw new Error('an element of the set was not found')
      })
      .add('service read', async () => {
        await service.read({ ...read, key: 'micro:key' })
      })
    await bench.run()
    report(bench)
  } finally {
    await cluster.close()
  }
}

function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[sorted.length >> 1] ?? NaN
}

async function signing(): Promise<void> {
  const tokens = new ContextTokens()
  const dots = [{ actor: 0, counter: 123456 }]
  const bench = new Bench({ time: TIME_MS, warmupTime: 200 })
  let i = 0
  bench.add('context issue', () => {
    tokens.issue(SET, element(i++ % SIZE), dots)
  })
  const token = tokens.issue(SET, 'x', dots)
  bench.add('context verify', () => {
    tokens.verify(SET, 'x', token)
  })
  await bench.run()
  report(bench)
}

const memory = new LevelPartitionReplica({ region: 0, partition: 0, replica: 0, regions: 2 })
await measure('memory-level', memory)
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
  await measure('classic-level', disk)
  await disk.close()
} finally {
  await rm(location, { recursive: true, force: true })
}
await throughService()
await signing()
