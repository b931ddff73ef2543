/**
 * Micro-benchmark: what the sets' head cache (`set-head-cache.ts`) buys, measured with and
 * without it in the same run, on LevelDB replicas in process: memory-level, and classic-level on
 * disk without fsync (with fsync, the sync dwarfs what is measured here). Per store, three
 * replicas side by side: `on` (the default), `fresh` (the cache, but a new iterator for each
 * `has`: `setCache: { openIterators: 0 }`) and `off` (`setCache: { maxSets: 0 }`), each with:
 * - single-element inserts into a 1k-element set (a fresh one each round) and into a set of 50k
 *   elements (growing by the inserts), from 1 client and from 16 at once: the growth ratio;
 * - `has` of a random element of the 50k set against a read of a random one of 50k keys.
 * Not a test (vitest runs `*.test.ts` only):
 *
 *   npx tsx gateway/test/storage/set-cache.micro.ts [--store memory|classic|both] [--rounds 8] [--calls 2000]
 *
 * Every case runs once per round, rounds interleaved (the order reversed every other round) after
 * a round of warm-up. It prints each case's median µs per call, and ratios taken round by round
 * and then the median: compare ratios, not absolute numbers, on a shared machine.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { HLC_ZERO } from '@causeway/core'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'both' },
    rounds: { type: 'string', default: '8' },
    calls: { type: 'string', default: '2000' },
  },
})
const ROUNDS = Number(values.rounds)
const CALLS = Number(values.calls)
const SMALL = 1_000
const BIG = 50_000
const KEYS = 50_000
const CLIENTS = 16
const BULK = 1000

/** The `i`-th fill element: 7 characters, distinct, scattered. */
const element = (i: number) => ((i * 2654435761) >>> 0).toString(36).padStart(7, '0')

type Case = (i: number) => Promise<unknown>

/** The replicas compared, by variant (see the module comment). */
const VARIANTS = {
  on: {},
  fresh: { openIterators: 0 },
  off: { maxSets: 0 },
} as const
type Variant = keyof typeof VARIANTS

interface Replicas {
  label: string
  replicas: Record<Variant, LevelPartitionReplica>
  close: () => Promise<void>
}

async function fill(replica: LevelPartitionReplica, name: string, size: number): Promise<void> {
  for (let i = 0; i < size; i += BULK) {
    const elements = Array.from({ length: Math.min(BULK, size - i) }, (_, j) => ({
      element: element(i + j),
    }))
    await replica.sets.write(name, { op: 'add', elements }, HLC_ZERO)
  }
}

async function prepare(replica: LevelPartitionReplica): Promise<void> {
  await replica.open()
  await fill(replica, 'big', BIG)
  for (let i = 0; i < KEYS; i += BULK) {
    await Promise.all(
      Array.from({ length: Math.min(BULK, KEYS - i) }, (_, j) =>
        replica.write(`k${i + j}`, '"value"', HLC_ZERO),
      ),
    )
  }
}

let fresh = 0
// Inserts of new elements, `clients` at a time.
function inserts(replica: LevelPartitionReplica, set: () => string, clients: number): Case {
  return async () => {
    const name = set()
    await Promise.all(
      Array.from({ length: clients }, () =>
        replica.sets.write(name, { op: 'add', elements: [{ element: `n${fresh++}` }] }, HLC_ZERO),
      ),
    )
  }
}

function cases(replica: LevelPartitionReplica, small: () => string): Record<string, Case> {
  return {
    'insert 1k, 1 client': inserts(replica, small, 1),
    'insert 50k, 1 client': inserts(replica, () => 'big', 1),
    'insert 1k, 16 clients': inserts(replica, small, CLIENTS),
    'insert 50k, 16 clients': inserts(replica, () => 'big', CLIENTS),
    'has 50k': async (i) => {
      const m = await replica.sets.has('big', element((i * 7919) % BIG))
      if (m.dots.length === 0) throw new Error('an element of the set was not found')
    },
    'get of 50k keys': (i) => replica.read(`k${(i * 7919) % KEYS}`),
  }
}

/** µs per call of every case in every measured round, by `on`/`off` and case name. */
async function measure(r: Replicas): Promise<Map<string, number[]>> {
  const perRound = new Map<string, number[]>()
  for (let round = 0; round <= ROUNDS; round++) {
    const small = `small-${round}`
    for (const replica of Object.values(r.replicas)) await fill(replica, small, SMALL)
    const all: [string, Case, number][] = []
    for (const [mode, replica] of Object.entries(r.replicas)) {
      for (const [name, run] of Object.entries(cases(replica, () => small))) {
        // A call of 16 clients is 16 inserts: it runs a 16th as many times.
        const calls = name.includes('16 clients') ? Math.ceil(CALLS / CLIENTS) : CALLS
        all.push([`${mode} ${name}`, run, calls])
      }
    }
    if (round % 2 === 1) all.reverse()
    for (const [name, run, calls] of all) {
      const start = process.hrtime.bigint()
      for (let i = 0; i < calls; i++) await run(round * calls + i)
      const per = name.includes('16 clients') ? calls * CLIENTS : calls
      const us = Number(process.hrtime.bigint() - start) / per / 1000
      if (round > 0) perRound.set(name, [...(perRound.get(name) ?? []), us]) // round 0 warms up
    }
  }
  return perRound
}

const median = (list: readonly number[]) => [...list].sort((a, b) => a - b)[list.length >> 1]!
const ratio = (a: readonly number[], b: readonly number[]) => median(a.map((x, i) => x / b[i]!))

function report(label: string, rounds: Map<string, number[]>): void {
  console.log(`\n${label}: median µs per call (range over ${ROUNDS} rounds)`)
  for (const [name, list] of rounds) {
    const sorted = [...list].sort((a, b) => a - b)
    const range = `${sorted[0]!.toFixed(1)}-${sorted.at(-1)!.toFixed(1)}`
    console.log(`  ${name.padEnd(30)} ${median(list).toFixed(1).padStart(7)}  (${range})`)
  }
  const at = (name: string) => rounds.get(name)!
  console.log(`${label}: ratios, round by round, median`)
  for (const mode of Object.keys(VARIANTS)) {
    for (const clients of ['1 client', '16 clients']) {
      // Rate at 50k over rate at 1k: µs at 1k over µs at 50k.
      const growth = ratio(
        at(`${mode} insert 1k, ${clients}`),
        at(`${mode} insert 50k, ${clients}`),
      )
      console.log(`  cache ${mode}: inserts/s at 50k ÷ at 1k, ${clients}: ${growth.toFixed(2)}×`)
    }
    const has = ratio(at(`${mode} has 50k`), at(`${mode} get of 50k keys`))
    console.log(`  cache ${mode}: has µs ÷ key get µs: ${has.toFixed(2)}×`)
  }
  for (const name of [
    'insert 1k, 1 client',
    'insert 50k, 1 client',
    'insert 1k, 16 clients',
    'insert 50k, 16 clients',
    'has 50k',
  ]) {
    const gain = ratio(at(`off ${name}`), at(`on ${name}`))
    console.log(`  ${name}: µs without the cache ÷ with it: ${gain.toFixed(2)}×`)
  }
  const iterators = ratio(at('fresh has 50k'), at('on has 50k'))
  console.log(
    `  has 50k: µs with a new iterator per call ÷ with open ones: ${iterators.toFixed(2)}×`,
  )
}

async function replicas(store: string): Promise<Replicas> {
  const shape = { region: 0, partition: 0, replica: 0, regions: 2 }
  const dirs: string[] = []
  const made = {} as Record<Variant, LevelPartitionReplica>
  for (const [variant, setCache] of Object.entries(VARIANTS)) {
    let location: string | undefined
    if (store === 'classic')
      dirs.push((location = await mkdtemp(join(tmpdir(), 'causeway-cache-'))))
    made[variant as Variant] = new LevelPartitionReplica({
      ...shape,
      setCache,
      ...(location === undefined ? {} : { location, sync: false }),
    })
  }
  return {
    label: store === 'classic' ? 'classic-level (no fsync)' : 'memory-level',
    replicas: made,
    close: async () => {
      for (const replica of Object.values(made)) await replica.close()
      for (const dir of dirs) await rm(dir, { recursive: true, force: true })
    },
  }
}

const stores = values.store === 'both' ? ['memory', 'classic'] : [values.store!]
for (const store of stores) {
  const r = await replicas(store)
  try {
    for (const replica of Object.values(r.replicas)) await prepare(replica)
    report(r.label, await measure(r))
  } finally {
    await r.close()
  }
}
