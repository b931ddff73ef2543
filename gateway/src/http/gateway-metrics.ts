/**
 * Prometheus metrics of one gateway. Each gateway owns its registry, because the dev cluster runs
 * one gateway per region in a single process and their series must not mix; every series carries
 * the gateway's `region` as a default label.
 */
import type { Status } from '@causeway/core'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** Options of {@link GatewayMetrics}. */
export interface GatewayMetricsOptions {
  /** Region id of the gateway, added to every series as the `region` label. */
  region: number
  /**
   * Also export Node's process metrics (CPU, memory, event loop lag, GC).
   * @default true
   */
  processMetrics?: boolean
}

const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]
const WAIT_BUCKETS = [0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
const HEADER_BUCKETS = [0, 16, 32, 64, 128, 256, 512, 1024, 2048]

/** The metrics of one gateway and the registry `GET /metrics` exposes. */
export class GatewayMetrics {
  readonly registry = new Registry()
  readonly #region: number
  readonly #requestDuration: Histogram<'operation' | 'level' | 'status'>
  readonly #readWait: Histogram<'level'>
  readonly #afterHeader: Histogram<'level'>
  readonly #lagEntries: Gauge<'partition' | 'replica' | 'role'>
  readonly #lagSeconds: Gauge<'partition' | 'replica' | 'role'>
  readonly #shipperBacklog: Gauge<'partition' | 'to'>
  readonly #shipperLagSeconds: Gauge<'partition' | 'to'>
  readonly #quarantinedKeys: Gauge
  readonly #leaderFenced: Gauge<'partition'>
  readonly #quarantineEvents: Counter<'event'>
  readonly #shipmentsRefused: Counter<'reason'>
  readonly #shipmentsDiverged: Counter<'origin'>
  /** The quarantine counts of the last status, so the counter grows by what happened since. */
  #quarantineSeen = { quarantined: 0, repaired: 0, skipped_entry: 0 }

  constructor(options: GatewayMetricsOptions) {
    this.#region = options.region
    const registers = [this.registry]
    this.registry.setDefaultLabels({ region: String(options.region) })
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry })
    this.#requestDuration = new Histogram({
      name: 'causeway_http_request_duration_seconds',
      help: 'Gateway request latency by operation, consistency level and HTTP status',
      labelNames: ['operation', 'level', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    })
    this.#readWait = new Histogram({
      name: 'causeway_read_wait_seconds',
      help: "Time a read waited for its replica's stable vector to cover the session's need",
      labelNames: ['level'],
      buckets: WAIT_BUCKETS,
      registers,
    })
    this.#afterHeader = new Histogram({
      name: 'causeway_read_after_header_bytes',
      help: 'Size of the causeway-after header of each read (0 when absent): how big sessions grow',
      labelNames: ['level'],
      buckets: HEADER_BUCKETS,
      registers,
    })
    this.#lagEntries = new Gauge({
      name: 'causeway_replica_lag_entries',
      help: 'Log entries a replica has not yet applied, behind the leader of its region',
      labelNames: ['partition', 'replica', 'role'],
      registers,
    })
    this.#lagSeconds = new Gauge({
      name: 'causeway_replica_lag_seconds',
      help: 'Age of the oldest log entry a replica has not yet applied',
      labelNames: ['partition', 'replica', 'role'],
      registers,
    })
    this.#shipperBacklog = new Gauge({
      name: 'causeway_shipper_backlog_entries',
      help: 'Local writes of a partition not yet acknowledged by the destination region',
      labelNames: ['partition', 'to'],
      registers,
    })
    this.#shipperLagSeconds = new Gauge({
      name: 'causeway_shipper_lag_seconds',
      help: 'Age of the oldest local write of a partition not yet acknowledged by the destination region',
      labelNames: ['partition', 'to'],
      registers,
    })
    this.#quarantinedKeys = new Gauge({
      name: 'causeway_quarantined_keys',
      help: 'Keys whose stored value a replica of this region cannot decode, now (reads of them fail with VALUE_QUARANTINED until rebuilt from the log)',
      registers,
    })
    this.#leaderFenced = new Gauge({
      name: 'causeway_leader_fenced',
      help: "1 while a partition's leader serves nothing (its process does not hold its claim: it came back empty or behind, or a failover is checking it): reads go to its followers, writes are refused; 0 when it serves",
      labelNames: ['partition'],
      registers,
    })
    this.#quarantineEvents = new Counter({
      name: 'causeway_quarantine_events_total',
      help: 'Keys quarantined, keys rebuilt from the log, and log entries applied without merging their undecodable sibling set',
      labelNames: ['event'],
      registers,
    })
    for (const event of ['quarantined', 'repaired', 'skipped_entry'])
      this.#quarantineEvents.inc({ event }, 0)
    this.#shipmentsRefused = new Counter({
      name: 'causeway_shipments_refused_total',
      help: 'Shipping envelopes from another region refused as of a format this gateway does not know (UNSUPPORTED_LOG_FORMAT): an envelope version, or a log entry kind',
      labelNames: ['reason'],
      registers,
    })
    for (const reason of ['version', 'kind']) this.#shipmentsRefused.inc({ reason }, 0)
    this.#shipmentsDiverged = new Counter({
      name: 'causeway_shipments_diverged_total',
      help: "Shipping envelopes from another region refused because they disagree with what this region holds of that region's log (SHIPPING_DIVERGED): an entry at a known index that is another write, or an epoch history that does not extend the one learned; by origin region",
      labelNames: ['origin'],
      registers,
    })
  }

  /** Counts a shipping envelope refused as disagreeing with what this region holds. */
  observeShipmentDiverged(origin: number): void {
    this.#shipmentsDiverged.inc({ origin: String(origin) })
  }

  /** Counts a shipping envelope refused as of an unknown version or entry kind. */
  observeShipmentRefused(reason: 'version' | 'kind'): void {
    this.#shipmentsRefused.inc({ reason })
  }

  /** Records one finished request. */
  observeRequest(operation: string, level: string, status: number, seconds: number): void {
    this.#requestDuration.observe({ operation, level, status: String(status) }, seconds)
  }

  /** Records how long a read waited at its replica. */
  observeReadWait(level: string, waitedMs: number): void {
    this.#readWait.observe({ level }, waitedMs / 1000)
  }

  /** Records the size of a read's `causeway-after` header (0 when absent). */
  observeAfterHeader(level: string, bytes: number): void {
    this.#afterHeader.observe({ level }, bytes)
  }

  /** Sets the replication gauges from a status snapshot of this gateway's region. */
  updateFromStatus(status: Status): void {
    this.#lagEntries.reset()
    this.#lagSeconds.reset()
    this.#shipperBacklog.reset()
    this.#shipperLagSeconds.reset()
    for (const r of status.replicas) {
      if (r.region !== this.#region) continue
      const labels = { partition: String(r.partition), replica: String(r.replica), role: r.role }
      this.#lagEntries.set(labels, r.lag.entries)
      this.#lagSeconds.set(labels, r.lag.ms / 1000)
    }
    for (const s of status.shippers) {
      if (s.from !== this.#region) continue
      const labels = { partition: String(s.partition), to: String(s.to) }
      this.#shipperBacklog.set(labels, s.backlog)
      this.#shipperLagSeconds.set(labels, s.lagMs / 1000)
    }
    for (const l of status.leaders ?? [])
      this.#leaderFenced.set({ partition: String(l.partition) }, l.serves === false ? 1 : 0)
    const q = status.quarantine
    if (q !== undefined) {
      this.#quarantinedKeys.set(q.quarantined)
      const now = { quarantined: q.detected, repaired: q.repaired, skipped_entry: q.skippedEntries }
      for (const event of ['quarantined', 'repaired', 'skipped_entry'] as const) {
        const delta = now[event] - this.#quarantineSeen[event]
        if (delta > 0) this.#quarantineEvents.inc({ event }, delta)
      }
      this.#quarantineSeen = now
    }
  }

  /** The exposition text and its content type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() }
  }
}
