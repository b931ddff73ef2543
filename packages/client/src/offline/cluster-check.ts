/**
 * Whether the gateway still serves the cluster this device's state belongs to. A cluster that was
 * reset (a `--memory` restart, a restore from a copy of its data) has a new cluster id and knows
 * nothing of the session's positions: replaying the outbox into it would apply the queued writes
 * without a word, and every session read would then fail for good with `VECTOR_UNREACHABLE`.
 *
 * So the cluster id is checked (a `GET /v1/topology`) before the outbox sends anything after an
 * offline spell or a start from the stored topology, and again when a read meets
 * `VECTOR_UNREACHABLE`. On a change the outbox pauses (writes queue, nothing is sent), and the app
 * gets the `clusterChanged` event (and `error` with `CLUSTER_CHANGED`); `db.resetCluster()` is the
 * way on.
 */
import { CausewayError, type Topology } from '@causeway/core'
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

  /** Compares a topology the client fetched (at connect, in the background) with its own. */
  found(topology: Topology): CausewayError | undefined {
    const own = this.#ctx.host.topology
    if (
      topology.cluster === own.cluster &&
      topology.regions.length === own.regions.length &&
      topology.partitions === own.partitions
    ) {
      this.#verified = true
      return undefined
    }
    if (this.#changed !== undefined) return this.#changed.error
    const error = new CausewayError(
      'CLUSTER_CHANGED',
      `the gateway now serves cluster ${JSON.stringify(topology.cluster)} (${topology.regions.length} regions × ${topology.partitions} partitions); ` +
        `this device's session, cache and queued writes belong to ${JSON.stringify(own.cluster)} (${own.regions.length} × ${own.partitions}). ` +
        'Nothing queued was sent: call db.resetCluster({ queued: "keep" | "drop" }) and connect again',
      { from: own.cluster, to: topology.cluster },
    )
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
    return this.found(checkTopology(res.body))
  }
}
