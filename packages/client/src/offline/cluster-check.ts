/**
 * Whether the gateway still serves the cluster this device's state belongs to. A cluster that was
 * reset (a `--memory` restart) has a new cluster id and knows nothing of the session's positions:
 * replaying the outbox into it would apply the queued writes without a word, and every session
 * read would then fail for good with `VECTOR_UNREACHABLE`. A cluster restored from a copy of its
 * data keeps its id (and its epochs) but lost what was written after the copy, the session's
 * latest writes among it: the same silent replay, reads failing until the partition's log grows
 * past the session's positions, and then served without the lost writes.
 *
 * So before the outbox sends anything after an offline spell or a start from the stored topology,
 * and again when a read meets `VECTOR_UNREACHABLE`, the cluster id is checked (a `GET
 * /v1/topology`) and, when it is the same, each partition's positions the session holds are
 * probed (a read of a probe key at the leader, with the session's vector and no wait): a position
 * the cluster never wrote (`VECTOR_UNREACHABLE`) or lost (`EPOCH_MISMATCH`) is a change too. On a
 * change the outbox pauses (writes queue, nothing is sent), and the app gets the `clusterChanged`
 * event (and `error` with `CLUSTER_CHANGED`); `db.resetCluster()` is the way on.
 */
import {
  CausewayError,
  formatReadNeed,
  HEADER_AFTER,
  partitionOf,
  type Topology,
} from '@causeway/core'
import { checkTopology } from '../topology.js'
import type { EngineContext } from './engine-context.js'

/** A cluster change found: the id this device's state belongs to and the gateway's topology. */
export interface ClusterChange {
  from: string
  topology: Topology
  error: CausewayError
}

export class ClusterCheck {
  readonly #ctx: EngineContext
  /** Checked since the last offline spell (or since the topology was fetched at connect). */
  #verified: boolean
  #changed: ClusterChange | undefined
  #checking: Promise<CausewayError | undefined> | undefined

  constructor(ctx: EngineContext, verified: boolean) {
    this.#ctx = ctx
    this.#verified = verified
    // Whatever happened while the gateway could not be reached, it is checked again.
    ctx.host.events.on('offline', () => (this.#verified = false))
  }

  /** The change found, if any: the outbox stays paused until `resetCluster`. */
  get changed(): ClusterChange | undefined {
    return this.#changed
  }

  /** Whether the outbox may send: checked, and no change found. */
  get clear(): boolean {
    return this.#verified && this.#changed === undefined
  }

  /** The cluster must be checked again before the outbox sends (a read met VECTOR_UNREACHABLE). */
  suspect(): void {
    this.#verified = false
    void this.verify().catch(() => {})
  }

  /**
   * Checks the gateway's cluster id (once at a time): undefined when it is this device's, the
   * `CLUSTER_CHANGED` error otherwise; rejects when the gateway cannot be asked.
   */
  verify(): Promise<CausewayError | undefined> {
    if (this.#changed !== undefined) return Promise.resolve(this.#changed.error)
    if (this.#verified) return Promise.resolve(undefined)
    this.#checking ??= this.#fetch().finally(() => (this.#checking = undefined))
    return this.#checking
  }

  /**
   * Compares a topology the client fetched (at connect, in the background) with its own. The same
   * cluster is verified at once only for a session that holds no positions: otherwise the
   * positions are probed (by `verify`) before the outbox sends.
   */
  found(topology: Topology): CausewayError | undefined {
    const changed = this.#compare(topology)
    if (changed === undefined && !this.#holdsPositions()) this.#verified = true
    return changed
  }

  #holdsPositions(): boolean {
    for (let p = 0; p < this.#ctx.host.topology.partitions; p++)
      if (this.#ctx.session.readNeed(p, 'session') !== undefined) return true
    return false
  }

  /** Undefined when `topology` is this device's cluster; the change found otherwise. */
  #compare(topology: Topology): CausewayError | undefined {
    const own = this.#ctx.host.topology
    if (
      topology.cluster === own.cluster &&
      topology.regions.length === own.regions.length &&
      topology.partitions === own.partitions
    )
      return undefined
    if (this.#changed !== undefined) return this.#changed.error
    return this.#change(
      topology,
      `the gateway now serves cluster ${JSON.stringify(topology.cluster)} (${topology.regions.length} regions × ${topology.partitions} partitions); ` +
        `this device's session, cache and queued writes belong to ${JSON.stringify(own.cluster)} (${own.regions.length} × ${own.partitions}). ` +
        'Nothing queued was sent: call db.resetCluster({ queued: "keep" | "drop" }) and connect again',
      { from: own.cluster, to: topology.cluster },
    )
  }

  /** Records a change (once) and tells the app. */
  #change(topology: Topology, message: string, details: Record<string, unknown>): CausewayError {
    if (this.#changed !== undefined) return this.#changed.error
    const own = this.#ctx.host.topology
    const error = new CausewayError('CLUSTER_CHANGED', message, details)
    this.#changed = { from: own.cluster, topology, error }
    const pending = this.#ctx.count.value
    this.#ctx.host.events.emit('clusterChanged', {
      error,
      from: own.cluster,
      to: topology.cluster,
      pending,
    })
    this.#ctx.host.events.emit('error', { error })
    return error
  }

  async #fetch(): Promise<CausewayError | undefined> {
    const parts = this.#ctx.host.parts
    const res = await parts.transport.request({
      method: 'GET',
      url: parts.home.url + '/v1/topology',
      headers: { ...parts.headers },
      signal: AbortSignal.any([parts.closing, AbortSignal.timeout(parts.defaults.timeoutMs)]),
    })
    if (res.status !== 200) throw CausewayError.fromBody(res.body, res.status)
    const topology = checkTopology(res.body)
    const changed = this.#compare(topology)
    if (changed !== undefined) return changed
    // Same id: a restore from a copy keeps it. Verified once the session's positions hold.
    const lost = await this.#probe()
    if (lost === undefined) {
      this.#verified = true
      return undefined
    }
    return this.#change(
      topology,
      `the gateway's cluster ${JSON.stringify(topology.cluster)} no longer holds positions this device's session has (partition ${lost.partition}: ${lost.error.message}): ` +
        'it was restored from an older copy of its data, or its region logs were lost, with writes this device made or read. ' +
        'Nothing queued was sent: call db.resetCluster({ queued: "keep" | "drop" }) and connect again',
      {
        from: topology.cluster,
        to: topology.cluster,
        reason: 'positions',
        partition: lost.partition,
        cause: lost.error.code,
      },
    )
  }

  /**
   * Reads a probe key of each partition the session holds positions in, at the home region's
   * leader, with the session's vector and no wait: the first refused with `VECTOR_UNREACHABLE` or
   * `EPOCH_MISMATCH` (positions the cluster never wrote, or lost), or undefined. Any other answer
   * (a key outside the token's scope, an overloaded gateway) says nothing of the positions.
   * Rejects when the gateway cannot be reached.
   */
  async #probe(): Promise<{ partition: number; error: CausewayError } | undefined> {
    const parts = this.#ctx.host.parts
    const session = this.#ctx.session
    const partitions = this.#ctx.host.topology.partitions
    const probes: Promise<{ partition: number; error: CausewayError } | undefined>[] = []
    for (let p = 0; p < partitions; p++) {
      const need = session.readNeed(p, 'session')
      const after = need && formatReadNeed(need)
      if (after === undefined) continue
      probes.push(
        parts.transport
          .request({
            method: 'GET',
            url: `${parts.home.url}/v1/kv/${encodeURIComponent(probeKey(p, partitions))}?level=session&replica=leader&timeoutMs=0`,
            headers: { ...parts.headers, [HEADER_AFTER]: after },
            signal: AbortSignal.any([parts.closing, AbortSignal.timeout(parts.defaults.timeoutMs)]),
          })
          .then((res) => {
            if (res.status === 200) return undefined
            const error = CausewayError.fromBody(res.body, res.status)
            return error.code === 'VECTOR_UNREACHABLE' || error.code === 'EPOCH_MISMATCH'
              ? { partition: p, error }
              : undefined
          }),
      )
    }
    for (const found of await Promise.all(probes)) if (found !== undefined) return found
    return undefined
  }
}

/** A key of partition `p` (found by trying, once per partition): what the probe reads. */
const probeKeys = new Map<string, string>()
function probeKey(p: number, partitions: number): string {
  const at = `${p}/${partitions}`
  let key = probeKeys.get(at)
  for (let i = 0; key === undefined; i++)
    if (partitionOf(`causeway-probe:${i}`, partitions) === p) key = `causeway-probe:${i}`
  probeKeys.set(at, key)
  return key
}
