/**
 * The administration of one `redis-server` that a Redis deployment's failover needs
 * (`cluster/redis-failover.ts`): its process (`INFO`: run id, role, its leader), the replication
 * user its followers authenticate as (`ACL SETUSER`, made at run time and never saved, so a
 * server that restarts has lost it), the credentials it replicates with itself (`CONFIG SET
 * masteruser/masterauth`, also at run time), and `REPLICAOF`. One connection of its own, which
 * fails fast while the server is away.
 */
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { backendError } from './backend-error.js'

/** What `INFO` says of a server's process and role. */
export interface ServerInfo {
  /** Its run id: new on every start of the process. */
  runId: string
  role: 'master' | 'slave'
  /** A follower's leader, as it replicates now. */
  master?: { host: string; port: number; linkUp: boolean }
  /** Followers attached to it (a leader). */
  connectedReplicas: number
}

/** Options of a {@link RedisServerAdmin}. */
export interface RedisServerAdminOptions {
  /** @default 2000 */
  connectTimeoutMs?: number
  /** @default 2000 */
  commandTimeoutMs?: number
}

/** The user followers replicate as (`masteruser`). */
export const REPLICATION_USER = 'causeway-replication'

/** One server's administration connection. */
export class RedisServerAdmin {
  readonly url: string
  readonly #redis: Redis
  readonly #backend: string

  constructor(url: string, options: RedisServerAdminOptions = {}) {
    this.url = url
    const parsed = new URL(url)
    this.#backend = `${parsed.protocol}//${parsed.host}`
    this.#redis = new Redis(url, {
      lazyConnect: true,
      connectionName: 'causeway:failover',
      connectTimeout: options.connectTimeoutMs ?? 2000,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    })
    this.#redis.on('error', () => {})
    this.#redis.connect().catch(() => {})
  }

  /** The server's address as `host:port` (how Sentinel names it). */
  get address(): string {
    return addressOf(this.url)
  }

  /** Its run id (`INFO server`) and its role (`ROLE`). */
  async info(): Promise<ServerInfo> {
    const [text, role] = await this.#call('info', () =>
      Promise.all([this.#redis.info('server'), this.#redis.call('ROLE') as Promise<unknown[]>]),
    )
    const runId = /^run_id:(\S+)/m.exec(text)?.[1] ?? ''
    if (role[0] === 'slave')
      return {
        runId,
        role: 'slave',
        master: {
          host: String(role[1]),
          port: Number(role[2]),
          linkUp: role[3] === 'connected',
        },
        connectedReplicas: 0,
      }
    return {
      runId,
      role: 'master',
      connectedReplicas: Array.isArray(role[2]) ? role[2].length : 0,
    }
  }

  /**
   * Makes sure followers can replicate from this server as {@link REPLICATION_USER} with
   * `password` (and with no other): `ACL SETUSER` with the rights replication needs. Made at run
   * time and never written to a file, so a restarted server does not have it. Resolves whether
   * it had to change anything.
   */
  async ensureReplicationUser(password: string): Promise<boolean> {
    const hash = createHash('sha256').update(password).digest('hex')
    const current = await this.#call('acl', () =>
      this.#redis.call('ACL', 'GETUSER', REPLICATION_USER),
    )
    if (current !== null && aclHasOnlyPassword(current, hash)) return false
    await this.#call('acl', () =>
      this.#redis.call(
        'ACL',
        'SETUSER',
        REPLICATION_USER,
        'reset',
        'on',
        `#${hash}`,
        '+psync',
        '+replconf',
        '+ping',
      ),
    )
    return true
  }

  /**
   * Makes this server replicate (when it is, or becomes, a follower) as {@link REPLICATION_USER}
   * with `password`. Resolves whether it had to change anything.
   */
  async ensureMasterAuth(password: string): Promise<boolean> {
    const got = (await this.#call('config', () => this.#redis.config('GET', 'master*'))) as string[]
    const config = new Map<string, string>()
    for (let i = 0; i + 1 < got.length; i += 2) config.set(got[i]!, got[i + 1]!)
    if (config.get('masteruser') === REPLICATION_USER && config.get('masterauth') === password)
      return false
    await this.#call('config', () =>
      this.#redis.config('SET', 'masteruser', REPLICATION_USER, 'masterauth', password),
    )
    return true
  }

  /** Its persistence settings: `appendonly` and `appendfsync`. */
  async persistence(): Promise<{ appendonly: string; appendfsync: string }> {
    const got = (await this.#call('config', () => this.#redis.config('GET', 'append*'))) as string[]
    const config = new Map<string, string>()
    for (let i = 0; i + 1 < got.length; i += 2) config.set(got[i]!, got[i + 1]!)
    return {
      appendonly: config.get('appendonly') ?? '',
      appendfsync: config.get('appendfsync') ?? '',
    }
  }

  /** Whether the connection is up (a first `info` may come before it is). */
  async ready(timeoutMs: number): Promise<boolean> {
    if (this.#redis.status === 'ready') return true
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#redis.off('ready', onReady)
        resolve(false)
      }, timeoutMs)
      const onReady = () => {
        clearTimeout(timer)
        resolve(true)
      }
      this.#redis.once('ready', onReady)
    })
  }

  /** `REPLICAOF host port`: this server follows that one (and drops what it holds). */
  async replicaOf(host: string, port: number): Promise<void> {
    await this.#call('replicaof', () => this.#redis.call('REPLICAOF', host, String(port)))
  }

  /** Ends the connection. */
  close(): void {
    this.#redis.disconnect()
  }

  async #call<T>(operation: string, call: () => Promise<T>): Promise<T> {
    if (this.#redis.status !== 'ready')
      throw backendError(new Error(`connection is ${this.#redis.status}`), this.#backend, operation)
    try {
      return await call()
    } catch (error) {
      throw backendError(error, this.#backend, operation)
    }
  }
}

/** `host:port` of a `redis://` URL. */
export function addressOf(url: string): string {
  const u = new URL(url)
  return `${u.hostname}:${u.port || '6379'}`
}

// Whether an `ACL GETUSER` reply is an enabled user with exactly the password of `hash`.
function aclHasOnlyPassword(reply: unknown, hash: string): boolean {
  if (!Array.isArray(reply)) return false
  const fields = new Map<string, unknown>()
  for (let i = 0; i + 1 < reply.length; i += 2) fields.set(String(reply[i]), reply[i + 1])
  const flags = fields.get('flags')
  const passwords = fields.get('passwords')
  return (
    Array.isArray(flags) &&
    flags.map(String).includes('on') &&
    Array.isArray(passwords) &&
    passwords.length === 1 &&
    String(passwords[0]) === hash
  )
}
