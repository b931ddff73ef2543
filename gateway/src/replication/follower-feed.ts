/**
 * Intra-region replication in the embedded cluster: a follower tails its region leader's log (all
 * origins) and applies it in order. It wakes on the leader's `sv` advances, never polls.
 *
 * Injected lag: each advance is a mark `(when, sv)`; the follower may apply up to a mark's `sv`
 * only `lagMs` after the mark, i.e. no sooner than `lagMs` after it could first see the entries.
 */
import { covers, maxInto } from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { LogEntry } from '../storage/partition-replica.js'

/** Options of a {@link FollowerFeed}. */
export interface FollowerFeedOptions {
  /** The leader of the partition in the follower's region. */
  leader: AbstractPartitionReplica
  follower: AbstractPartitionReplica
  /**
   * How long after the leader applied an entry the follower may apply it, in ms.
   * @default 0
   */
  lagMs?: number
  /**
   * Most entries per origin read and applied in one step.
   * @default 512
   */
  batchSize?: number
  /**
   * Wait before trying again after a failed step, in ms.
   * @default 1000
   */
  retryMs?: number
  /**
   * Told about failed steps (the feed retries by itself).
   * @default ignores them
   */
  onError?: (error: unknown) => void
}

/** How far a follower is behind its leader. */
export interface FollowerLag {
  /** Entries the leader has applied and the follower has not. */
  entries: number
  /** Age of the oldest of them, in ms (0 when caught up). */
  ms: number
}

interface Mark {
  at: number
  sv: number[]
}

/** Keeps one follower applying its leader's log. */
export class FollowerFeed {
  readonly #leader: AbstractPartitionReplica
  readonly #follower: AbstractPartitionReplica
  readonly #lagMs: number
  readonly #batchSize: number
  readonly #retryMs: number
  readonly #onError: (error: unknown) => void

  /** Leader advances the follower has not covered yet, oldest first. */
  #marks: Mark[] = []
  /** How many of `#marks` (a prefix) are due, i.e. folded into `#target`. */
  #due = 0
  /** What the follower may apply now. */
  #target: number[]
  #timer: ReturnType<typeof setTimeout> | undefined
  #pulling: Promise<void> | undefined
  #again = false
  #unsubscribe: (() => void) | undefined
  #stopped = false

  constructor(options: FollowerFeedOptions) {
    this.#leader = options.leader
    this.#follower = options.follower
    this.#lagMs = options.lagMs ?? 0
    this.#batchSize = options.batchSize ?? 512
    this.#retryMs = options.retryMs ?? 1000
    this.#onError = options.onError ?? (() => {})
    this.#target = this.#follower.sv()
  }

  /** Starts following; first catches up from the follower's own `sv`. */
  start(): void {
    if (this.#unsubscribe || this.#stopped) return
    this.#unsubscribe = this.#leader.onAdvance((sv) => this.#mark(sv))
    this.#mark(this.#leader.sv())
  }

  /** Stops following, once the step in progress has finished. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#unsubscribe?.()
    clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#pulling
  }

  /** How far the follower is behind the leader now. */
  lag(): FollowerLag {
    const leader = this.#leader.sv()
    const follower = this.#follower.sv()
    let entries = 0
    leader.forEach((idx, d) => (entries += Math.max(0, idx - (follower[d] ?? 0))))
    const oldest = this.#marks.find((m) => !covers(follower, m.sv))
    return { entries, ms: entries > 0 && oldest ? Math.max(0, Date.now() - oldest.at) : 0 }
  }

  #mark(sv: readonly number[]): void {
    if (this.#stopped) return
    const at = Date.now()
    const last = this.#marks.at(-1)
    // Advances within one millisecond share a mark, so a busy leader does not grow the list.
    if (last && last.at === at && this.#marks.length > this.#due) last.sv = [...sv]
    else this.#marks.push({ at, sv: [...sv] })
    this.#release()
  }

  // Folds every due mark into the target, pulls if that moved it, and arms a timer for the next.
  #release(): void {
    if (this.#stopped) return
    const now = Date.now()
    let moved = false
    while (this.#due < this.#marks.length && this.#marks[this.#due]!.at + this.#lagMs <= now) {
      maxInto(this.#target, this.#marks[this.#due++]!.sv)
      moved = true
    }
    if (moved) this.#pull()
    const next = this.#marks[this.#due]
    if (next && this.#timer === undefined) {
      this.#timer = setTimeout(
        () => {
          this.#timer = undefined
          this.#release()
        },
        Math.max(0, next.at + this.#lagMs - now),
      )
    }
  }

  #pull(): void {
    if (this.#pulling) {
      this.#again = true
      return
    }
    this.#pulling = this.#catchUp().finally(() => {
      this.#pulling = undefined
      if (this.#again && !this.#stopped) {
        this.#again = false
        this.#pull()
      }
    })
  }

  // Applies the leader's log up to the target, a bounded batch per origin at a time.
  async #catchUp(): Promise<void> {
    try {
      while (!this.#stopped) {
        const sv = this.#follower.sv()
        // Plain loops: this runs after every leader commit.
        const reads: Promise<LogEntry[]>[] = []
        for (let d = 0; d < this.#target.length; d++) {
          const behind = this.#target[d]! - sv[d]!
          if (behind > 0)
            reads.push(this.#leader.readLog(d, sv[d]!, Math.min(this.#batchSize, behind)))
        }
        if (reads.length === 0) break
        const entries = reads.length === 1 ? await reads[0]! : (await Promise.all(reads)).flat()
        if (entries.length === 0 || this.#stopped) break
        await this.#follower.apply(entries)
        if (covers(sv, this.#follower.sv())) break // no progress: do not spin
      }
      this.#forgetCovered()
    } catch (error) {
      if (this.#stopped) return
      this.#onError(error)
      clearTimeout(this.#timer)
      this.#timer = setTimeout(() => {
        this.#timer = undefined
        this.#pull()
        this.#release()
      }, this.#retryMs)
    }
  }

  #forgetCovered(): void {
    const sv = this.#follower.sv()
    let covered = 0
    while (covered < this.#due && covers(sv, this.#marks[covered]!.sv)) covered++
    this.#marks.splice(0, covered)
    this.#due -= covered
  }
}
