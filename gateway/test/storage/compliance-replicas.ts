/**
 * The replicas of a compliance suite run in `fresh` or `reopened` mode (a reopened replica is
 * closed and opened again over its store before use, so checks run on what was persisted),
 * closed and their stores destroyed after each test. Call it inside the suite's `describe`.
 */
import { afterEach } from 'vitest'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'
import type { ReplicaStore, ReplicaStoreFactory } from './replica-compliance.js'

export function complianceReplicas(
  factory: ReplicaStoreFactory,
  mode: 'fresh' | 'reopened',
  regions: number,
): {
  /** A replica of region `region` on an empty store (reopened once in `reopened` mode). */
  fresh(region?: number): Promise<AbstractPartitionReplica>
  /** In `reopened` mode (or `always`), a new replica object over `r`'s store; else `r`. */
  restart(r: AbstractPartitionReplica, always?: boolean): Promise<AbstractPartitionReplica>
} {
  const stores: ReplicaStore[] = []
  const opened: AbstractPartitionReplica[] = []
  const storeOf = new WeakMap<AbstractPartitionReplica, ReplicaStore>()

  afterEach(async () => {
    for (const r of opened.splice(0)) await r.close()
    for (const s of stores.splice(0)) await s.destroy()
  })

  async function openOn(store: ReplicaStore): Promise<AbstractPartitionReplica> {
    const r = store.replica()
    opened.push(r)
    storeOf.set(r, store)
    await r.open()
    return r
  }

  async function restart(r: AbstractPartitionReplica, always = false) {
    if (mode !== 'reopened' && !always) return r
    await r.close()
    return openOn(storeOf.get(r)!)
  }

  return {
    async fresh(region = 0) {
      const store = await factory({ region, partition: 0, replica: 0, regions })
      stores.push(store)
      const r = await openOn(store)
      return mode === 'reopened' ? restart(r, true) : r
    },
    restart,
  }
}
