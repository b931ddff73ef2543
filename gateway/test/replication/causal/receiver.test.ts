/**
 * The receiver (Eunomia Algorithm 5) of region 2 of a three-region cluster, on real replicas in
 * memory: an update becomes visible only once its label and its data are here, every earlier
 * update of its origin is applied and its dependencies on the third region are; `SiteTime` rises
 * only after a whole wave is applied; labels it has are dropped, a gap stops an envelope; and a
 * receiver started again skips what its leaders already applied.
 */
import { HLC_ZERO, type Hlc, hlcFrom, label, labelEnvelope, type Label } from '@causeway/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { CausalApplier } from '../../../src/replication/causal/causal-applier.js'
import { MemoryReceiverStore } from '../../../src/replication/causal/memory-receiver-store.js'
import { LevelPartitionReplica } from '../../../src/storage/level/level-replica.js'
import { entry, ship } from '../../support/log-entries.js'

const REGIONS = 3
const HERE = 2
const t = (ms: number): Hlc => hlcFrom(1_700_000_000_000 + ms, 0)

let leaders: LevelPartitionReplica[] = []
let appliers: CausalApplier[] = []

afterEach(async () => {
  await Promise.all(appliers.map((a) => a.stop()))
  await Promise.all(leaders.map((l) => l.close()))
  appliers = []
  leaders = []
})

async function setup(partitions = 2) {
  leaders = Array.from(
    { length: partitions },
    (_, p) =>
      new LevelPartitionReplica({
        region: HERE,
        partition: p,
        replica: 0,
        regions: REGIONS,
        sync: false,
      }),
  )
  await Promise.all(leaders.map((l) => l.open()))
  const store = new MemoryReceiverStore({ region: HERE, regions: REGIONS, leaders })
  const applier = new CausalApplier({ region: HERE, regions: REGIONS, leaders, store, retryMs: 2 })
  appliers.push(applier)
  return { store, applier }
}

/** A label of origin `from` for partition `p`'s update `idx` at `ms`, depending on `deps`. */
function lab(
  from: number,
  p: number,
  idx: number,
  ms: number,
  deps: Partial<Record<number, Hlc>> = {},
): Label {
  const vts = Array.from({ length: REGIONS }, (_, d) =>
    d === from ? t(ms) : (deps[d] ?? HLC_ZERO),
  )
  return label(p, idx, vts)
}

/** The data of a label: a put of `v<idx>` to key `k<p>`. */
const data = (from: number, l: Label) => entry(from, l.idx, `k${l.p}`, `"v${l.idx}"`, l.vts[from]!)

async function value(p: number): Promise<string | undefined> {
  return (await leaders[p]!.read(`k${p}`)).version?.value
}

describe('the receiver (Algorithm 5)', () => {
  it('applies an update once its label and data are both here, in its origin’s order', async () => {
    const { store, applier } = await setup()
    applier.start()
    const a = lab(0, 0, 1, 10)
    const b = lab(0, 1, 1, 20)
    // The label of b first, then a's: labels only ever arrive in stream order, so a is sent first.
    await store.append(labelEnvelope(0, t(20), [a, b]))
    await store.stash(1, ship(0, [data(0, b)]))
    // b's data is here, but a (its origin's earlier update) is not: nothing is applied. Once the
    // applier has looked and is blocked (not after a 30 ms sleep, which on a loaded machine may
    // end before it looked at all, and pass without testing anything).
    await vi.waitFor(() => expect(applier.blocked(0)).toBe('data'))
    expect(await value(1)).toBeUndefined()
    await store.stash(0, ship(0, [data(0, a)]))
    applier.kick()
    await vi.waitFor(async () => expect(await value(1)).toBe('"v1"'))
    expect(await value(0)).toBe('"v1"')
    expect((await store.read())[0]).toBe(t(20))
    expect(await store.queued(0)).toBe(0)
  })

  it('holds an update until what it depends on in a third region is applied', async () => {
    const { store, applier } = await setup()
    applier.start()
    // y (region 1) was written by a client that had seen x (region 0).
    const x = lab(0, 0, 1, 10)
    const y = lab(1, 1, 1, 50, { 0: t(10) })
    await store.append(labelEnvelope(1, t(50), [y]))
    await store.stash(1, ship(1, [data(1, y)]))
    await vi.waitFor(() => expect(applier.blocked(1)).toBe('dependencies'))
    expect(await value(1)).toBeUndefined()
    await store.stash(0, ship(0, [data(0, x)]))
    await store.append(labelEnvelope(0, t(10), [x]))
    applier.kick()
    await vi.waitFor(async () => expect(await value(1)).toBe('"v1"'))
    const site = await store.read()
    expect([site[0], site[1]]).toEqual([t(10), t(50)])
  })

  it('drops labels it has, stops an envelope at a gap, and takes a stable time only whole', async () => {
    const { store } = await setup()
    const l1 = lab(0, 0, 1, 10)
    const l2 = lab(0, 0, 2, 20)
    const l3 = lab(0, 0, 3, 30)
    expect((await store.append(labelEnvelope(0, t(20), [l1, l2]))).received).toEqual([2, 0])
    // A resend from an older checkpoint: what it has is dropped.
    expect((await store.append(labelEnvelope(0, t(30), [l1, l2, l3]))).received).toEqual([3, 0])
    expect(await store.queued(0)).toBe(3)
    // A gap (idx 5 after 3) stops it there; its stable time is not taken.
    const gap = await store.append(labelEnvelope(0, t(99), [lab(0, 0, 5, 50)]))
    expect(gap).toMatchObject({ received: [3, 0], stable: t(30) })
  })

  it('raises SiteTime to the origin’s stable time once everything before it is applied', async () => {
    const { store, applier } = await setup()
    applier.start()
    const a = lab(0, 0, 1, 10)
    await store.stash(0, ship(0, [data(0, a)]))
    await store.append(labelEnvelope(0, t(40), [a]))
    await vi.waitFor(async () => expect((await store.read())[0]).toBe(t(40)))
    // A heartbeat of the region alone moves it on.
    await store.append(labelEnvelope(0, t(70), []))
    applier.kick()
    await vi.waitFor(async () => expect((await store.read())[0]).toBe(t(70)))
  })

  it('after a restart, skips updates its leaders applied and applies the rest', async () => {
    const { store, applier } = await setup()
    const labels = [lab(0, 0, 1, 10), lab(0, 1, 1, 11), lab(0, 0, 2, 12), lab(0, 1, 2, 13)]
    // Partition 0 applied both of its updates before the restart, partition 1 none (a wave cut
    // short): the sender resends from what the leaders applied.
    await leaders[0]!.receive(ship(0, [data(0, labels[0]!), data(0, labels[2]!)]))
    expect((await store.labelCheckpoint(0)).received).toEqual([2, 0])
    await store.append(labelEnvelope(0, t(13), labels))
    expect(await store.queued(0)).toBe(2)
    await store.stash(1, ship(0, [data(0, labels[1]!), data(0, labels[3]!)]))
    applier.start()
    await vi.waitFor(async () => expect(await value(1)).toBe('"v2"'))
    expect(leaders.map((l) => l.sv()[0])).toEqual([2, 2])
    expect(applier.applied).toBe(2)
  })
})
