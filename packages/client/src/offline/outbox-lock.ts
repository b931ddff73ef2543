/**
 * Who owns the outbox: of the clients (tabs, workers, instances) that share one local store,
 * exactly one replays its queued operations at a time; the others queue into it and see what it
 * holds. Three ways to decide, picked by what the runtime has:
 *
 * - the Web Locks API (`navigator.locks`, every current browser): an exclusive lock named after
 *   the store, held while the client lives; the browser releases it when the tab closes or
 *   crashes, and the next waiting tab gets it;
 * - a lease over a `BroadcastChannel` where there are no Web Locks: the owner announces itself
 *   every second; a tab that hears nothing for three claims the lease (the lowest id wins a
 *   tie). A tab frozen longer than that may briefly find a second owner: operation ids keep a
 *   double replay from applying anything twice;
 * - one process (Node, tests): a lock in this module, keyed by the store's name, so two
 *   instances in one process behave as two tabs do.
 */

/** An ownership claim on one outbox. */
export interface OutboxLock {
  /** Whether this client owns the outbox now. */
  readonly owner: boolean
  /** Starts contending; `onOwner` runs when this client becomes the owner. */
  start(onOwner: () => void): Promise<void>
  /** Gives ownership up (on close); the next contender gets it. */
  release(): void
}

interface LocalLockState {
  holder: InProcessLock | undefined
  waiting: InProcessLock[]
}

const localLocks = new Map<string, LocalLockState>()

/** The lock of one process (see the module comment). */
export class InProcessLock implements OutboxLock {
  readonly #name: string
  #owner = false
  #onOwner: (() => void) | undefined
  #released = false

  constructor(name: string) {
    this.#name = name
  }

  get owner(): boolean {
    return this.#owner
  }

  async start(onOwner: () => void): Promise<void> {
    this.#onOwner = onOwner
    let state = localLocks.get(this.#name)
    if (state === undefined)
      localLocks.set(this.#name, (state = { holder: undefined, waiting: [] }))
    if (state.holder === undefined) this.#grant(state)
    else state.waiting.push(this)
  }

  #grant(state: LocalLockState): void {
    state.holder = this
    this.#owner = true
    this.#onOwner?.()
  }

  release(): void {
    if (this.#released) return
    this.#released = true
    const state = localLocks.get(this.#name)
    if (state === undefined) return
    state.waiting = state.waiting.filter((w) => w !== this)
    if (state.holder !== this) return
    this.#owner = false
    state.holder = undefined
    const next = state.waiting.shift()
    if (next !== undefined) next.#grant(state)
    else localLocks.delete(this.#name)
  }
}

interface LockManagerLike {
  /** Settles with the callback's result once the lock is released (not when it is granted). */
  request(
    name: string,
    options: { signal?: AbortSignal; ifAvailable?: boolean },
    callback: (lock: unknown) => Promise<void> | void,
  ): Promise<unknown>
}

/** The lock of the Web Locks API. */
export class WebLock implements OutboxLock {
  readonly #name: string
  readonly #locks: LockManagerLike
  readonly #abort = new AbortController()
  #owner = false
  #let: (() => void) | undefined

  constructor(name: string, locks: LockManagerLike) {
    this.#name = name
    this.#locks = locks
  }

  get owner(): boolean {
    return this.#owner
  }

  async start(onOwner: () => void): Promise<void> {
    const hold = () => {
      this.#owner = true
      onOwner()
      return new Promise<void>((resolve) => (this.#let = resolve))
    }
    // First without waiting, so a lone tab owns the outbox as soon as connect() resolves. The
    // promise `request` returns settles only when the lock is released (the callback's promise
    // settles): wait for the callback to have run, not for that.
    let got = false
    await new Promise<void>((answered) => {
      this.#locks
        .request(this.#name, { ifAvailable: true }, (lock) => {
          answered()
          if (lock === null) return
          got = true
          return hold()
        })
        .catch(() => answered())
    })
    if (got || this.#abort.signal.aborted) return
    // Held elsewhere: queue for it (the browser grants it when the holder goes).
    this.#locks.request(this.#name, { signal: this.#abort.signal }, () => hold()).catch(() => {})
  }

  release(): void {
    this.#owner = false
    this.#abort.abort()
    this.#let?.()
  }
}

interface ChannelLike {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  removeEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  close(): void
}

type LeaseMessage =
  | { t: 'lease-held'; id: string }
  | { t: 'lease-claim'; id: string }
  | { t: 'lease-released'; id: string }

const HEARTBEAT_MS = 1000
const EXPIRY_MS = 3000
const CLAIM_WAIT_MS = 300

/** The lease over a `BroadcastChannel` (see the module comment). */
export class ChannelLease implements OutboxLock {
  readonly #id: string
  readonly #channel: ChannelLike
  #owner = false
  #lastHeld = 0
  #claiming = false
  #contest = false
  #timer: ReturnType<typeof setInterval> | undefined
  #onOwner: (() => void) | undefined
  readonly #listener = (event: { data: unknown }) => this.#message(event.data as LeaseMessage)

  constructor(id: string, channel: ChannelLike) {
    this.#id = id
    this.#channel = channel
  }

  get owner(): boolean {
    return this.#owner
  }

  async start(onOwner: () => void): Promise<void> {
    this.#onOwner = onOwner
    this.#channel.addEventListener('message', this.#listener)
    this.#lastHeld = 0
    this.#timer = setInterval(() => this.#tick(), HEARTBEAT_MS)
    ;(this.#timer as { unref?: () => void }).unref?.()
    await this.#claim()
  }

  #message(m: LeaseMessage | null): void {
    if (typeof m !== 'object' || m === null) return
    if (m.t === 'lease-held') {
      this.#lastHeld = Date.now()
      if (this.#claiming) this.#contest = true
      // Two owners (a frozen tab woke up): the lower id keeps it.
      if (this.#owner && m.id < this.#id) this.#owner = false
    } else if (m.t === 'lease-claim') {
      if (this.#owner) this.#post({ t: 'lease-held', id: this.#id })
      else if (this.#claiming && m.id < this.#id) this.#contest = true
    } else if (m.t === 'lease-released') {
      this.#lastHeld = 0
      void this.#claim()
    }
  }

  #post(m: LeaseMessage): void {
    this.#channel.postMessage(m)
  }

  #tick(): void {
    if (this.#owner) this.#post({ t: 'lease-held', id: this.#id })
    else if (Date.now() - this.#lastHeld > EXPIRY_MS) void this.#claim()
  }

  async #claim(): Promise<void> {
    if (this.#owner || this.#claiming || Date.now() - this.#lastHeld <= EXPIRY_MS) return
    this.#claiming = true
    this.#contest = false
    this.#post({ t: 'lease-claim', id: this.#id })
    await new Promise((resolve) => setTimeout(resolve, CLAIM_WAIT_MS))
    this.#claiming = false
    if (this.#contest || this.#timer === undefined) return
    this.#owner = true
    this.#post({ t: 'lease-held', id: this.#id })
    this.#onOwner?.()
  }

  release(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
    this.#channel.removeEventListener('message', this.#listener)
    if (this.#owner) this.#post({ t: 'lease-released', id: this.#id })
    this.#owner = false
  }
}

/** The lock this runtime offers for outbox `name` (see the module comment). */
export function outboxLock(name: string, id: string, channel: ChannelLike | undefined): OutboxLock {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks
  if (locks !== undefined && typeof locks.request === 'function') return new WebLock(name, locks)
  // A browser without Web Locks (no `process`): the lease. Node: one process owns its store.
  const isNode =
    typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions
      ?.node === 'string'
  if (!isNode && channel !== undefined) return new ChannelLease(id, channel)
  return new InProcessLock(name)
}
