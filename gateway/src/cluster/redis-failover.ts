/**
 * Who leads each partition of a Redis region, and the epoch protocol that makes a change of
 * leader safe (the design is in `docs/failover.md`). Every gateway process of the region runs
 * one; what they do is idempotent, so any number may run at once.
 *
 * For each partition, every `checkIntervalMs` (and at once on a Sentinel `+switch-master` or a
 * write refused for its claim):
 *
 * 1. **Who is the leader**: the master Sentinel names, or, without Sentinel, replica 0.
 * 2. **Does its process hold the claim** (`meta.leader` is its run id, `epoch-scripts.ts`)? Then
 *    writes go to it under that claim (`RedisPartitionReplica.lead`), its replication user exists
 *    with the claim's password, and its followers replicate with that password.
 * 3. **Otherwise it is a new leader process** (a promoted follower, or a server that restarted,
 *    perhaps with less than it acknowledged, or wiped). No write goes to it. It may lead only if
 *    a majority of the partition's replicas can be asked and none holds a later epoch or more of
 *    the region's own entries than it does. If one does, it came back behind: with Sentinel the
 *    gateway asks for a failover to a follower (`SENTINEL FAILOVER`); without, it reports the
 *    partition fenced. Its followers never resynchronise down to it: they authenticate to their
 *    leader with a password derived from the leader process's run id, for a user the gateway
 *    creates at run time and Redis never saves, which a restarted process has not got.
 * 4. **Claiming**: create the replication user; set the followers' password; take back from the
 *    other regions the entries of this region they received and the new leader lacks
 *    (`replication/region-log.ts`); then the claim script ends the current epoch at what the new
 *    leader holds and starts the next above every index any replica reserved. Then writes go to
 *    it.
 *
 * With Sentinel, a server that is a master but not the leader (an old leader that came back) is
 * made a follower of the leader once the leader holds its claim and Sentinel is not in the
 * middle of a failover (Sentinel would, after some seconds; this is sooner).
 */
import { createHmac } from 'node:crypto'
import type { LogEntry } from '@causeway/core'
import type { ClaimState, RedisPartitionReplica } from '../storage/redis/redis-partition-replica.js'
import { RedisServerAdmin, addressOf } from '../storage/redis/server-admin.js'
import type { ServerPersistence } from './durability-check.js'
import type { SentinelLeaders } from './sentinel-leaders.js'

/** What a partition's leadership is doing, as the status reports it. */
export type LeadershipState =
  /** The leader's process holds the claim; writes go to it. */
  | 'leading'
  /** A new leader is being checked and claimed. */
  | 'claiming'
  /** The leader came back behind its followers: no writes until another leads. */
  | 'fenced'
  /** Not known yet (the first check has not finished, or the leader cannot be reached). */
  | 'unknown'

/** One partition's leadership, for the status. */
export interface Leadership {
  partition: number
  /** Index of the leading replica in the region's config. */
  replica: number
  state: LeadershipState
  epoch: number
  /** Why it is not leading, when it is not. */
  note?: string
  /**
   * Whether the leader serves reads and writes now (its process holds its claim); while false,
   * reads go to its followers and writes are refused. Set by the cluster.
   */
  serves?: boolean
}

/** Options of {@link RedisFailover}. */
export interface RedisFailoverOptions {
  region: number
  /** `replicas[p][i]`, as the region's config lists them. */
  replicas: readonly (readonly RedisPartitionReplica[])[]
  /** The Redis URL of each, for the administration connections. */
  urls: readonly (readonly string[])[]
  /** The region's Sentinels; undefined: replica 0 always leads. */
  sentinels?: SentinelLeaders
  /** The key the replication passwords derive from (the cluster secret). */
  secret: string
  /** Part of each password, so clusters sharing servers never share one. */
  namespace: string
  checkIntervalMs: number
  connectTimeoutMs: number
  commandTimeoutMs: number
  /**
   * Takes back the entries of this region's log of `partition` after `after` that other regions
   * received, applying them with `apply`; resolves to what it found, within `deadline`.
   */
  recover: (
    partition: number,
    after: number,
    deadline: number,
    apply: (entries: readonly LogEntry[]) => Promise<void>,
  ) => Promise<{ recovered: number; unanswered: number[] }>
  /** How long recovery may take, ms. */
  recoveryTimeoutMs: number
  /** Told when partition `p`'s leading replica changed. */
  onLeader: (p: number, replica: number) => void
  /** Told about what the failover did and could not do. */
  onEvent: (message: string, error?: unknown) => void
}

/** Least time between two failovers a gateway asks Sentinel for, per partition, in ms. */
const FAILOVER_RETRY_MS = 1000

/** The leadership of one region's partitions. See the module comment. */
export class RedisFailover {
  readonly #options: RedisFailoverOptions
  readonly #leaders: number[]
  readonly #state: Leadership[]
  readonly #admins: RedisServerAdmin[][]
  readonly #checking = new Map<number, Promise<void>>()
  readonly #again = new Set<number>()
  readonly #askedFailover = new Map<number, number>()
  #timer: ReturnType<typeof setInterval> | undefined
  #closed = false

  constructor(options: RedisFailoverOptions) {
    this.#options = options
    this.#leaders = options.replicas.map(() => 0)
    this.#state = options.replicas.map((_, p) => ({
      partition: p,
      replica: 0,
      state: 'unknown',
      epoch: 1,
    }))
    this.#admins = options.urls.map((urls) =>
      urls.map(
        (url) =>
          new RedisServerAdmin(url, {
            connectTimeoutMs: options.connectTimeoutMs,
            commandTimeoutMs: options.commandTimeoutMs,
          }),
      ),
    )
  }

  /** Index of the replica of partition `p` that leads (or is about to). */
  leaderOf(p: number): number {
    return this.#leaders[p] ?? 0
  }

  /** Partition `p`'s leadership. */
  leadershipOf(p: number): Leadership | undefined {
    const state = this.#state[p]
    return state && { ...state }
  }

  /** Every partition's leadership. */
  leadership(): Leadership[] {
    return this.#state.map((s) => ({ ...s }))
  }

  /** Checks every partition once (resolves when done), then keeps checking. */
  async start(): Promise<void> {
    this.#options.sentinels?.start()
    await Promise.all(this.#options.replicas.map((_, p) => this.check(p)))
    if (this.#closed) return
    this.#timer = setInterval(() => {
      for (let p = 0; p < this.#options.replicas.length; p++) void this.check(p)
    }, this.#options.checkIntervalMs)
    this.#timer.unref()
  }

  /**
   * One look at partition `p` (see the module comment); a call while one runs asks for another
   * after it. Never rejects: what goes wrong is told to `onEvent`.
   */
  check(p: number): Promise<void> {
    const running = this.#checking.get(p)
    if (running) {
      this.#again.add(p)
      return running
    }
    const run = (async () => {
      try {
        do {
          this.#again.delete(p)
          if (this.#closed) return
          await this.#check(p).catch((error: unknown) => {
            this.#set(p, { state: 'unknown', note: messageOf(error) })
          })
        } while (this.#again.has(p))
      } finally {
        this.#checking.delete(p)
      }
    })()
    this.#checking.set(p, run)
    return run
  }

  /** Every server's persistence settings, as it answers (within a second each). */
  async persistence(): Promise<ServerPersistence[]> {
    return Promise.all(
      this.#admins.flatMap((partition, p) =>
        partition.map(async (admin, i) => {
          const where = `partition ${p} replica ${i} (${admin.address})`
          try {
            if (!(await admin.ready(1000))) return { where }
            return { where, ...(await admin.persistence()) }
          } catch {
            return { where }
          }
        }),
      ),
    )
  }

  /** Stops checking and closes the administration connections. */
  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    this.#options.sentinels?.close()
    await Promise.allSettled([...this.#checking.values()])
    for (const admin of this.#admins.flat()) admin.close()
  }

  async #check(p: number): Promise<void> {
    const replicas = this.#options.replicas[p]!
    const i = await this.#leaderIndex(p)
    if (i === undefined) return
    if (i !== this.#leaders[p]) {
      replicas[this.#leaders[p]!]?.resign()
      this.#leaders[p] = i
      this.#options.onLeader(p, i)
      this.#options.onEvent(`partition ${p}: replica ${i} is the leader now`)
    }
    const leader = replicas[i]!
    const admin = this.#admins[p]![i]!
    const info = await admin.info()
    if (info.role !== 'master') {
      // Sentinel's answer is ahead of the server (or behind it): look again soon.
      leader.resign()
      this.#set(p, { replica: i, state: 'unknown', note: `replica ${i} is not a master yet` })
      return
    }
    const state = await leader.claimState()
    const password = this.#password(p, info.runId)
    if (state.leader === info.runId) {
      await admin.ensureReplicationUser(password)
      leader.lead(info.runId)
      this.#set(p, { replica: i, state: 'leading', epoch: state.epoch })
      await this.#followers(p, i, password, true)
      return
    }

    // A leader process that does not hold the claim: no write goes to it until it does.
    leader.resign()
    this.#set(p, { replica: i, state: 'claiming', epoch: state.epoch })
    const others = (
      await Promise.all(
        replicas.map(async (r, j) =>
          j === i
            ? undefined
            : r.claimState().then(
                (s) => ({ j, s }),
                () => undefined,
              ),
        ),
      )
    ).filter((o): o is { j: number; s: ClaimState } => o !== undefined)
    const majority = Math.floor(replicas.length / 2) + 1
    if (others.length + 1 < majority) {
      this.#set(p, {
        state: 'fenced',
        note: `only ${others.length + 1} of ${replicas.length} replicas answer; a new leader needs ${majority}`,
      })
      return
    }
    const region = this.#options.region
    // With Sentinel, a server that led before and restarted (its process is new; its data may be
    // all there, cut short or gone) does not lead again: Sentinel may be promoting a follower at
    // this very moment (the server was away for as long as Sentinel waits), and two leaders would
    // each take writes. A follower takes over; what the restarted server holds that it lacks is
    // taken back from it below. (A partition of one replica has no follower to take over.)
    const restarted =
      state.leader !== '' && state.leaderAddr === admin.address && state.leader !== info.runId
    if (restarted && this.#options.sentinels && replicas.length > 1) {
      const note = `replica ${i} restarted (its process changed): a follower takes over, and it follows`
      this.#set(p, { state: 'fenced', note })
      await this.#askFailover(p, note)
      return
    }
    // A replica with entries of this region's current epoch that the candidate lacks (it was a
    // follower that had not received them yet, or the old leader that restarted on its data):
    // the candidate takes them back from it before it starts a new epoch.
    for (const { j, s: theirs } of others) {
      if (theirs.epoch !== state.epoch || !sameHistory(theirs, state)) continue
      if ((theirs.sv[region] ?? 0) <= (state.sv[region] ?? 0)) continue
      await this.#takeBack(p, i, j, state.sv[region] ?? 0, theirs.sv[region] ?? 0)
      state.sv[region] = (await leader.claimState()).sv[region] ?? 0
    }
    const ahead = others.find(
      ({ s }) => s.epoch > state.epoch || (s.sv[region] ?? 0) > (state.sv[region] ?? 0),
    )
    if (ahead !== undefined) {
      const note =
        `replica ${i} came back behind replica ${ahead.j} (epoch ${state.epoch}, ${state.sv[region] ?? 0} entries ` +
        `of this region, against epoch ${ahead.s.epoch}, ${ahead.s.sv[region] ?? 0}): it must not lead, and its followers keep their data`
      this.#set(p, { state: 'fenced', note })
      await this.#askFailover(p, note)
      return
    }

    await admin.ensureReplicationUser(password)
    await this.#followers(p, i, password, false)
    const recovery = await this.#options.recover(
      p,
      state.sv[region] ?? 0,
      Date.now() + this.#options.recoveryTimeoutMs,
      (entries) => leader.recover(entries),
    )
    if (recovery.unanswered.length > 0 && state.epoch > 0)
      this.#options.onEvent(
        `partition ${p}: regions ${recovery.unanswered.join(', ')} did not answer the new leader's recovery; entries only they received from the old leader are not taken back`,
      )
    const minEpoch = Math.max(0, ...others.map(({ s }) => s.epoch))
    const minFirst =
      Math.max(0, ...others.map(({ s }) => Math.max(s.reserved, s.sv[region] ?? 0))) + 1
    const history = await leader.claim(info.runId, admin.address, minEpoch, minFirst)
    leader.lead(info.runId)
    const epoch = history[history.length - 1]!.epoch
    this.#set(p, { replica: i, state: 'leading', epoch })
    this.#options.onEvent(
      `partition ${p}: replica ${i} leads in epoch ${epoch}` +
        (recovery.recovered > 0
          ? ` (took back ${recovery.recovered} entries from the other regions)`
          : ''),
    )
  }

  // Copies this region's entries (after, through] from replica `j` to leader `i` of `p`, in order.
  async #takeBack(p: number, i: number, j: number, after: number, through: number): Promise<void> {
    const region = this.#options.region
    const from = this.#options.replicas[p]![j]!
    const to = this.#options.replicas[p]![i]!
    let at = after
    while (at < through) {
      const entries = await from.readLog(region, at, Math.min(500, through - at))
      const run = entries.filter((e, k) => e.idx === at + k + 1)
      if (run.length === 0) break
      await to.recover(run)
      at = run.at(-1)!.idx
    }
    if (at > after)
      this.#options.onEvent(
        `partition ${p}: replica ${i} took back entries ${after + 1}..${at} of this region from replica ${j}`,
      )
  }

  // The index of partition `p`'s leader, by Sentinel or replica 0; undefined when unknown.
  async #leaderIndex(p: number): Promise<number | undefined> {
    const sentinels = this.#options.sentinels
    if (!sentinels) return 0
    const master = await sentinels.master(p)
    const address = `${master.host}:${master.port}`
    const i = this.#admins[p]!.findIndex((a) => a.address === address)
    if (i === -1) {
      this.#set(p, {
        state: 'unknown',
        note: `Sentinel names ${address}, which is not a replica of this partition in the config`,
      })
      return undefined
    }
    return i
  }

  /**
   * Has every other replica of partition `p` replicate from leader `i` with `password`; once the
   * leader holds its claim (`settled`), a master among them that is not the leader (an old
   * leader that came back) is made its follower, unless Sentinel is failing over meanwhile.
   */
  async #followers(p: number, i: number, password: string, settled: boolean): Promise<void> {
    const leader = this.#admins[p]![i]!
    const [host, port] = splitAddress(leader.address)
    await Promise.all(
      this.#admins[p]!.map(async (admin, j) => {
        if (j === i) return
        try {
          await admin.ensureMasterAuth(password)
          // Without Sentinel the leader never moves: followers keep the leader they were
          // started with, and one an operator detached stays so.
          if (!settled || !this.#options.sentinels) return
          const info = await admin.info()
          if (info.role !== 'master') return
          if (await this.#options.sentinels.failingOver(p)) return
          await admin.replicaOf(host, port)
          this.#options.onEvent(`partition ${p}: replica ${j} now follows replica ${i}`)
        } catch {
          // away: the next check does it
        }
      }),
    )
  }

  async #askFailover(p: number, why: string): Promise<void> {
    const sentinels = this.#options.sentinels
    if (!sentinels) {
      this.#options.onEvent(
        `partition ${p}: ${why}. Without Sentinel nobody promotes a follower: promote one by hand (REPLICAOF NO ONE on it, then REPLICAOF it on the others), or run with Sentinel`,
      )
      return
    }
    const last = this.#askedFailover.get(p) ?? -Infinity
    if (Date.now() - last < FAILOVER_RETRY_MS) return
    this.#askedFailover.set(p, Date.now())
    const started = await sentinels.failover(p)
    this.#options.onEvent(
      `partition ${p}: ${why}; ${started ? 'asked Sentinel to promote a follower' : 'Sentinel is already failing over (or has no follower to promote)'}`,
    )
  }

  #password(p: number, runId: string): string {
    return createHmac('sha256', this.#options.secret)
      .update(
        `causeway replication\u0000${this.#options.namespace}\u0000${this.#options.region}\u0000${p}\u0000${runId}`,
      )
      .digest('base64url')
  }

  #set(p: number, change: Partial<Omit<Leadership, 'partition'>>): void {
    const next: Leadership = { ...this.#state[p]!, ...change }
    if (change.state === 'leading' || (change.state !== undefined && change.note === undefined))
      delete next.note
    if (change.note !== undefined) next.note = change.note
    this.#state[p] = next
  }
}

// Whether two replicas hold the same history of this region (so one's log continues the other's).
function sameHistory(a: ClaimState, b: ClaimState): boolean {
  return JSON.stringify(a.history) === JSON.stringify(b.history)
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':')
  return [address.slice(0, at), Number(address.slice(at + 1))]
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

export { addressOf }
