/**
 * The client's events (`db.on('pending', ...)`): a small typed emitter that works the same in
 * browsers and Node, so the SDK needs neither `EventTarget` subclassing nor Node's `events`.
 */
import type { CausewayError } from '@causeway/core'
import type { FailedOp, PendingOp, SyncResult } from './outbox-types.js'

/** A sibling as a `conflict` event shows it. */
export interface ConflictSibling {
  value: unknown
  deleted: boolean
  ts: string
  dc: number
}

/** What each event carries. */
export interface CausewayEvents {
  /** The gateway answered again after a failure to reach it. */
  online: { at: number }
  /** The gateway could not be reached; writes queue and reads are served locally. */
  offline: { at: number; error: CausewayError }
  /** The number of queued operations changed. */
  pending: { count: number }
  /** A replay ended with the outbox empty (also after a replay that only moved ops to `failed()`). */
  synced: SyncResult
  /**
   * A key of a siblings namespace is known to hold more than one live version (after a sync, a
   * read or a change of the feed); settle it with `db.resolve`.
   */
  conflict: {
    key: string
    siblings: unknown[]
    versions: ConflictSibling[]
    context: string | undefined
  }
  /**
   * Something failed that no call is waiting for: a queued operation refused for good (it is now
   * in `db.failed()`: `op` is set), the local store refusing a write of the read cache or the
   * session, a background refresh.
   */
  error: { error: CausewayError; op?: FailedOp | PendingOp }
  /**
   * The gateway serves another cluster than the one this device's state belongs to (`from`, `to`:
   * the cluster ids; `error`: `CLUSTER_CHANGED`), or the same cluster no longer holds positions
   * the session has (restored from an older copy of its data: `from === to`, `error.details.reason`
   * `'positions'`). The outbox is paused: nothing queued was or
   * will be sent (`pending` ops wait) until `db.resetCluster({ queued: 'keep' | 'drop' })`, after
   * which the app connects again.
   */
  clusterChanged: { error: CausewayError; from: string; to: string; pending: number }
}

/** The names of {@link CausewayEvents}. */
export type CausewayEventName = keyof CausewayEvents

/** A listener of event `K`. */
export type CausewayListener<K extends CausewayEventName> = (event: CausewayEvents[K]) => void

/** The emitter behind `db.on`. A throwing listener does not stop the others. */
export class EventHub {
  readonly #listeners = new Map<CausewayEventName, Set<(event: never) => void>>()

  on<K extends CausewayEventName>(name: K, listener: CausewayListener<K>): () => void {
    let set = this.#listeners.get(name)
    if (set === undefined) this.#listeners.set(name, (set = new Set()))
    set.add(listener as (event: never) => void)
    return () => {
      set.delete(listener as (event: never) => void)
    }
  }

  /** Whether anyone listens to `name` (so an event that costs something to build can be skipped). */
  has(name: CausewayEventName): boolean {
    return (this.#listeners.get(name)?.size ?? 0) > 0
  }

  emit<K extends CausewayEventName>(name: K, event: CausewayEvents[K]): void {
    const set = this.#listeners.get(name)
    if (set === undefined) return
    for (const listener of [...set]) {
      try {
        ;(listener as CausewayListener<K>)(event)
      } catch (error) {
        // A listener's bug must not break the SDK's bookkeeping: report it outside.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }

  clear(): void {
    this.#listeners.clear()
  }
}
