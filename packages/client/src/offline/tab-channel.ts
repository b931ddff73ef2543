/**
 * Messages between the clients that share one local store (tabs of one app, or two instances in
 * one process): the outbox changed, please replay, what became of an operation, a replay's end.
 * Over a `BroadcastChannel` named after the store (browsers and Node have one); none where the
 * runtime has no `BroadcastChannel` (then each client is alone with its store).
 */
import type { ErrorBody } from '@causeway/core'
import type { WriteResultBody } from './outcome.js'
import type { SyncResult } from './outbox-types.js'

/** What became of one queued operation. */
export type OpOutcome =
  | { opId: string; result: WriteResultBody }
  | { opId: string; error: ErrorBody }
  | { opId: string; pending: true }

/** A message among the clients of one store. */
export type TabMessage =
  | { t: 'changed' }
  | { t: 'kick' }
  | { t: 'outcomes'; outcomes: OpOutcome[] }
  | { t: 'synced'; result: Omit<SyncResult, 'error' | 'owner'> & { error?: ErrorBody } }

/** The channel of one store. */
export interface TabChannel {
  post(message: TabMessage): void
  /** Also receives the lease's messages (the lock's own traffic), which it ignores. */
  readonly raw:
    | {
        postMessage(message: unknown): void
        addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
        removeEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
        close(): void
      }
    | undefined
  close(): void
}

/** Opens the channel of store `name`, calling `onMessage` with each message of another client. */
export function openTabChannel(name: string, onMessage: (m: TabMessage) => void): TabChannel {
  const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel
  if (Channel === undefined) return { post() {}, raw: undefined, close() {} }
  const channel = new Channel(name)
  // Node: an open channel must not keep the process alive.
  ;(channel as unknown as { unref?: () => void }).unref?.()
  const listener = (event: MessageEvent): void => {
    const data = event.data as TabMessage | null
    if (typeof data === 'object' && data !== null && typeof data.t === 'string') onMessage(data)
  }
  channel.addEventListener('message', listener)
  let closed = false
  return {
    post(message) {
      if (!closed) channel.postMessage(message)
    },
    raw: channel as unknown as TabChannel['raw'],
    close() {
      if (closed) return
      closed = true
      channel.removeEventListener('message', listener)
      channel.close()
    },
  }
}
