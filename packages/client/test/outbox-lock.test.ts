/**
 * The owner of an outbox among tabs, in Node: the Web Locks variant against a lock manager with
 * the API's semantics (the promise `request` returns settles when the lock is released, not when
 * it is granted: a client that awaited it never finished connecting), and the BroadcastChannel
 * lease over Node's own BroadcastChannel. The browser tests (examples/offline-mobile) run both in
 * Chromium.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ChannelLease, WebLock } from '../src/offline/outbox-lock.js'

type Callback = (lock: { name: string } | null) => unknown

/** `navigator.locks` as the Web Locks API specifies it, for exclusive locks. */
class SpecLocks {
  readonly #held = new Set<string>()
  readonly #waiting = new Map<string, (() => void)[]>()

  request(
    name: string,
    options: { signal?: AbortSignal; ifAvailable?: boolean },
    callback: Callback,
  ): Promise<unknown> {
    if (options.ifAvailable === true && this.#held.has(name))
      return Promise.resolve().then(() => callback(null))
    return new Promise((resolve, reject) => {
      const grant = () => {
        this.#held.add(name)
        // The returned promise follows the callback's: it settles when the lock is released.
        Promise.resolve()
          .then(() => callback({ name }))
          .then(resolve, reject)
          .finally(() => this.#release(name))
      }
      if (!this.#held.has(name)) {
        grant()
        return
      }
      const queue = this.#waiting.get(name) ?? []
      this.#waiting.set(name, queue)
      queue.push(grant)
      options.signal?.addEventListener('abort', () => {
        const i = queue.indexOf(grant)
        if (i >= 0) queue.splice(i, 1)
        reject(new DOMException('aborted', 'AbortError'))
      })
    })
  }

  #release(name: string): void {
    this.#held.delete(name)
    this.#waiting.get(name)?.shift()?.()
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not settle in ${ms} ms`)), ms),
    ),
  ])
}

async function until(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('WebLock (navigator.locks)', () => {
  it('start() resolves once the lock is granted, not when it is released', async () => {
    const locks = new SpecLocks()
    const lock = new WebLock('outbox', locks)
    let owned = 0
    await within(
      lock.start(() => owned++),
      1000,
      'start()',
    )
    expect(lock.owner).toBe(true)
    expect(owned).toBe(1)
    lock.release()
  })

  it('a second client waits; it owns the outbox once the first releases it', async () => {
    const locks = new SpecLocks()
    const first = new WebLock('outbox', locks)
    const second = new WebLock('outbox', locks)
    await within(
      first.start(() => {}),
      1000,
      'first start()',
    )
    let secondOwned = false
    await within(
      second.start(() => (secondOwned = true)),
      1000,
      'second start()',
    )
    expect([first.owner, second.owner]).toEqual([true, false])
    first.release()
    await until(() => secondOwned)
    expect([first.owner, second.owner]).toEqual([false, true])
    second.release()
  })

  it('a waiting client that closes leaves the queue; the lock goes to the next one', async () => {
    const locks = new SpecLocks()
    const [a, b, c] = [new WebLock('o', locks), new WebLock('o', locks), new WebLock('o', locks)]
    const owners: string[] = []
    for (const [id, lock] of Object.entries({ a, b, c }))
      await within(
        lock.start(() => owners.push(id)),
        1000,
        `${id}.start()`,
      )
    b.release()
    a.release()
    await until(() => owners.length === 2)
    expect(owners).toEqual(['a', 'c'])
    expect(b.owner).toBe(false)
    c.release()
  })
})

describe('ChannelLease (BroadcastChannel, no Web Locks)', () => {
  const open: { lease: ChannelLease; channel: BroadcastChannel }[] = []
  afterEach(() => {
    for (const { lease, channel } of open.splice(0)) {
      lease.release()
      channel.close()
    }
  })

  function lease(id: string, name: string): ChannelLease {
    const channel = new BroadcastChannel(name)
    const l = new ChannelLease(id, channel as never)
    open.push({ lease: l, channel })
    return l
  }

  it('of clients starting together exactly one owns the lease; it passes on when the owner releases it', async () => {
    const name = `lease-${Math.random()}`
    const clients = ['c', 'a', 'b'].map((id) => lease(id, name))
    const owned: number[] = []
    await Promise.all(clients.map((c, i) => c.start(() => owned.push(i))))
    // Once one owns it (a 500 ms sleep alone decided this before: a slow election left none),
    // no other takes it too within the next 500 ms: one owner callback in all. The wait only
    // gives a second owner room to appear; it cannot fail a correct lease however slow.
    await until(() => clients.some((c) => c.owner), 30_000)
    await new Promise((r) => setTimeout(r, 500))
    expect(clients.filter((c) => c.owner)).toHaveLength(1)
    expect(owned).toHaveLength(1)
    const owner = clients.find((c) => c.owner)!
    owner.release()
    await until(() => clients.filter((c) => c.owner).length === 1)
    expect(owner.owner).toBe(false)
    expect(owned).toHaveLength(2)
  })
})
