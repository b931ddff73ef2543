/**
 * What Redis Sentinel says of a region's partition leaders: who the master of each partition is
 * (`SENTINEL GET-MASTER-ADDR-BY-NAME`), a forced failover (`SENTINEL FAILOVER`) when a gateway
 * finds the master behind its followers, and the `+switch-master` events Sentinel publishes when
 * it promotes one, so the gateway looks at once instead of at its next check. Commands go to the
 * region's Sentinels in turn (the first that answers); the events come from one Sentinel at a
 * time, with a re-subscription to the next when it goes away.
 */
import { Redis } from 'ioredis'

/** Options of {@link SentinelLeaders}. */
export interface SentinelLeadersOptions {
  /** The region's Sentinels, `redis://host:port`. */
  sentinels: readonly string[]
  /** The master name of partition `p` (`sentinelMasterName`). */
  name: (p: number) => string
  partitions: number
  /** Told when Sentinel switched partition `p`'s master. */
  onSwitch: (p: number) => void
  /** Deadline of one Sentinel command, ms. @default 1000 */
  commandTimeoutMs?: number
}

/** A master's address as Sentinel names it. */
export interface MasterAddress {
  host: string
  port: number
}

/** The Sentinels of one region. See the module comment. */
export class SentinelLeaders {
  readonly #options: SentinelLeadersOptions
  readonly #clients: Redis[]
  readonly #names = new Map<string, number>()
  #subscriber: Redis | undefined
  #subscribedTo = -1
  #next = 0
  #closed = false

  constructor(options: SentinelLeadersOptions) {
    if (options.sentinels.length === 0) throw new RangeError('no Sentinel to ask')
    this.#options = options
    const timeout = options.commandTimeoutMs ?? 1000
    this.#clients = options.sentinels.map((url) => {
      const client = new Redis(url, {
        lazyConnect: true,
        connectionName: 'causeway:sentinel',
        connectTimeout: timeout,
        commandTimeout: timeout,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: (attempt) => Math.min(100 * attempt, 1000),
      })
      client.on('error', () => {})
      client.connect().catch(() => {})
      return client
    })
    for (let p = 0; p < options.partitions; p++) this.#names.set(options.name(p), p)
  }

  /** Starts listening for `+switch-master`. */
  start(): void {
    this.#subscribe()
  }

  /** The master of partition `p` now, as the first Sentinel that answers says. */
  async master(p: number): Promise<MasterAddress> {
    const reply = await this.#ask((c) =>
      c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.#options.name(p)),
    )
    if (!Array.isArray(reply) || reply.length !== 2)
      throw new Error(`Sentinel knows no master named ${this.#options.name(p)}`)
    return { host: String(reply[0]), port: Number(reply[1]) }
  }

  /** Whether a failover of partition `p`'s master is under way (its flags say so). */
  async failingOver(p: number): Promise<boolean> {
    const reply = await this.#ask((c) => c.call('SENTINEL', 'MASTER', this.#options.name(p)))
    if (!Array.isArray(reply)) return false
    const at = reply.indexOf('flags')
    const flags = at === -1 ? '' : String(reply[at + 1])
    return flags.includes('failover_in_progress') || flags.includes('promoted')
  }

  /**
   * Asks Sentinel to promote one of partition `p`'s followers now (`SENTINEL FAILOVER`, which
   * needs no agreement of the others). Resolves whether one started (false while one is under
   * way, or with no follower Sentinel would promote).
   */
  async failover(p: number): Promise<boolean> {
    try {
      await this.#ask((c) => c.call('SENTINEL', 'FAILOVER', this.#options.name(p)))
      return true
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      if (message.startsWith('INPROG') || message.startsWith('NOGOODSLAVE')) return false
      throw error
    }
  }

  /** Closes every connection. */
  close(): void {
    this.#closed = true
    this.#subscriber?.disconnect()
    for (const c of this.#clients) c.disconnect()
  }

  // The first Sentinel that answers, starting from the last one that did.
  async #ask<T>(call: (client: Redis) => Promise<T>): Promise<T> {
    let last: unknown
    for (let k = 0; k < this.#clients.length; k++) {
      const i = (this.#next + k) % this.#clients.length
      const client = this.#clients[i]!
      if (client.status !== 'ready') {
        last = new Error(`Sentinel ${this.#options.sentinels[i]} is ${client.status}`)
        continue
      }
      try {
        const reply = await call(client)
        this.#next = i
        return reply
      } catch (error) {
        const message = error instanceof Error ? error.message : ''
        // A refusal is Sentinel's answer, not its absence.
        if (/^(INPROG|NOGOODSLAVE|ERR)/.test(message)) throw error
        last = error
      }
    }
    throw last instanceof Error ? last : new Error('no Sentinel answered')
  }

  // Subscribes to `+switch-master` on one Sentinel; on its loss, on the next.
  #subscribe(): void {
    if (this.#closed) return
    this.#subscribedTo = (this.#subscribedTo + 1) % this.#options.sentinels.length
    const url = this.#options.sentinels[this.#subscribedTo]!
    const sub = new Redis(url, {
      lazyConnect: true,
      connectionName: 'causeway:sentinel-events',
      connectTimeout: this.#options.commandTimeoutMs ?? 1000,
      maxRetriesPerRequest: 0,
      // Reconnect to another Sentinel rather than wait for this one.
      retryStrategy: () => null,
    })
    this.#subscriber = sub
    sub.on('error', () => {})
    sub.on('message', (_channel: string, message: string) => {
      const p = this.#names.get(message.split(' ', 1)[0]!)
      if (p !== undefined) this.#options.onSwitch(p)
    })
    sub.once('end', () => {
      if (this.#subscriber !== sub || this.#closed) return
      setTimeout(() => this.#subscribe(), 200).unref()
    })
    sub
      .connect()
      .then(() => sub.subscribe('+switch-master'))
      .catch(() => sub.disconnect())
  }
}
