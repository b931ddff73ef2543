/**
 * What the parts of one client's offline engine share (`engine.ts` builds it): the client, the
 * local store, the session, the channel and lock among the store's clients, and the state of the
 * ops this client has in flight.
 */
import type { ConflictMode, Session, Topology } from '@causeway/core'
import type { ClientParts } from '../client-access.js'
import type { Connectivity } from './connectivity.js'
import type { EventHub } from './events.js'
import type { LocalStore } from './local-store.js'
import type { OutboxCount } from './outbox-count.js'
import type { OutboxLock } from './outbox-lock.js'
import type { SessionSaver } from './session-store.js'
import type { TabChannel } from './tab-channel.js'

/** What the engine needs of its client. */
export interface EngineHost {
  readonly parts: ClientParts
  readonly events: EventHub
  readonly topology: Topology
  conflictMode(key: string): ConflictMode
  /** Reads `key` from the gateway (which records it in the cache and reports a conflict). */
  refresh(key: string): Promise<unknown>
}

/** The shared state of one engine. */
export interface EngineContext {
  readonly host: EngineHost
  readonly store: LocalStore
  readonly session: Session
  /** What saves the session in the store (`session-store.ts`). */
  readonly sessionSaver: SessionSaver
  readonly channel: TabChannel
  readonly lock: OutboxLock
  readonly connectivity: Connectivity
  readonly count: OutboxCount
  /** Ops this client sent alone and is waiting for (they are in the outbox meanwhile). */
  readonly inflight: Map<string, Promise<unknown>>
  /** Ops applied whose removal from the outbox is being written: no longer pending. */
  readonly removing: Set<string>
  /**
   * Records the applied ops whose recording was deferred (`AppliedOps.defer`); resolves once
   * every recording asked for so far is written. Whatever reads the read cache calls it first.
   */
  settleApplied(): Promise<void>
  /** Set once, by `close()`. */
  closed: boolean
}
