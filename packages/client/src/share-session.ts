/**
 * Sharing one user's session between browser tabs (or workers) of the same origin: every tab
 * posts its session on a `BroadcastChannel` after each call that changed it, and merges what
 * other tabs post. A tab that opens asks the others for theirs, so it starts where they are.
 * Merging is an elementwise max, so messages may arrive late, twice or out of order.
 */
import { Session, type SessionJSON, type SessionScope } from '@causeway/core'

/** The part of `BroadcastChannel` this helper uses (so tests and other runtimes can supply one). */
export interface SessionChannel {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  removeEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  close?(): void
}

/** What the helper needs of a client: its session and a change notification. */
export interface SessionSource {
  readonly session: Session
  onSessionChange(listener: (session: Session) => void): () => void
}

/** Options of {@link shareSession}. */
export interface ShareSessionOptions {
  /**
   * The channel to use. The helper closes it on `stop()` only if it created it.
   * @default new BroadcastChannel(`causeway-session:${cluster}`)
   */
  channel?: SessionChannel
  /**
   * Called with the error when another tab posts a session that is malformed or of another
   * cluster; such a message is ignored.
   * @default ignore silently
   */
  onError?: (error: unknown) => void
  /**
   * How long `ready` waits for another tab's session before resolving without one (a tab alone
   * gets no answer).
   * @default 100
   */
  readyTimeoutMs?: number
}

/** A running share; `stop()` ends it. */
export interface SessionSharing {
  /**
   * Resolves once this tab holds what the other tabs have: when the first of them answers with
   * its session (merged), or after `readyTimeoutMs` when none does. Await it before a first
   * call that must carry the other tabs' guarantees (a read of what another tab just wrote).
   */
  readonly ready: Promise<void>
  /** Posts the session now, e.g. after `db.session.merge(...)`. */
  publish(): void
  /** Stops listening and posting. */
  stop(): void
}

/** Message of the share protocol. */
export type SessionMessage =
  { type: 'causeway-session'; session: SessionJSON } | { type: 'causeway-session-hello' }

/**
 * Shares `db.session` with the other tabs that call `shareSession` on the same cluster. Each tab
 * keeps its own client; after a call in one tab, the others' next calls carry its guarantees
 * (read-your-writes across tabs, for example).
 *
 * @example
 * const db = await connect({ url, session: localStorage.session })
 * const sharing = shareSession(db)
 * addEventListener('pagehide', () => { localStorage.session = JSON.stringify(db.session) })
 */
export function shareSession(db: SessionSource, options: ShareSessionOptions = {}): SessionSharing {
  const session = db.session
  const scope: SessionScope = {
    cluster: session.cluster,
    regions: session.regions,
    partitions: session.partitions,
  }
  const ownsChannel = options.channel === undefined
  const channel: SessionChannel =
    options.channel ?? new BroadcastChannel(`causeway-session:${session.cluster}`)
  let pending = false
  let stopped = false
  let markReady!: () => void
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  const readyTimer = setTimeout(markReady, options.readyTimeoutMs ?? 100)
  ;(readyTimer as { unref?: () => void }).unref?.()

  const post = (): void => {
    pending = false
    if (stopped) return
    const message: SessionMessage = { type: 'causeway-session', session: session.toJSON() }
    channel.postMessage(message)
  }
  // Several calls finishing in one tick post once: serialising costs more than merging.
  const publishSoon = (): void => {
    if (pending || stopped) return
    pending = true
    queueMicrotask(post)
  }
  const onMessage = (event: { data: unknown }): void => {
    const data = event.data as Partial<SessionMessage> | null
    if (typeof data !== 'object' || data === null) return
    if (data.type === 'causeway-session-hello') {
      publishSoon()
    } else if (data.type === 'causeway-session') {
      try {
        session.merge(Session.fromJSON((data as { session: unknown }).session, scope))
        clearTimeout(readyTimer)
        markReady()
      } catch (error) {
        options.onError?.(error)
      }
    }
  }

  channel.addEventListener('message', onMessage)
  const unsubscribe = db.onSessionChange(publishSoon)
  channel.postMessage({ type: 'causeway-session-hello' } satisfies SessionMessage)

  return {
    ready,
    publish: publishSoon,
    stop() {
      if (stopped) return
      stopped = true
      clearTimeout(readyTimer)
      markReady()
      unsubscribe()
      channel.removeEventListener('message', onMessage)
      if (ownsChannel) channel.close?.()
    },
  }
}
