/**
 * Whether a Redis region's servers can keep the durability the deployment promises
 * (`redis.durability` in the config; what each level promises under which `appendfsync` is in
 * `docs/failover.md`). Pure: it judges what the servers said (`CONFIG GET`), so a gateway can
 * warn at start, and refuse to start with `--strict`.
 */

/** What one server said of its persistence. */
export interface ServerPersistence {
  /** Where it is, for the message: `partition 0 replica 1 (redis://...)`. */
  where: string
  /** `appendonly`: `yes` or `no`; undefined when the server could not be asked. */
  appendonly?: string
  /** `appendfsync`: `always`, `everysec` or `no`. */
  appendfsync?: string
}

/** What a region's servers are asked to keep, and how they are laid out. */
export interface DurabilityPromise {
  /** The level every write is at least promised (the config's `redis.durability`). */
  durability: 'leader' | 'majority'
  /** Replicas per partition. */
  replicas: number
  /** Whether Sentinel replaces a lost leader (else a partition whose leader is lost stops). */
  sentinel: boolean
}

/**
 * The ways `servers` cannot keep `promise`, one sentence each; empty when they can. Servers
 * that could not be asked are named too (their configuration is not known).
 */
export function durabilityProblems(
  promise: DurabilityPromise,
  servers: readonly ServerPersistence[],
): string[] {
  const problems: string[] = []
  const unknown = servers.filter((s) => s.appendonly === undefined)
  if (unknown.length > 0)
    problems.push(
      `could not ask ${unknown.map((s) => s.where).join(', ')} for its persistence settings`,
    )
  const known = servers.filter((s) => s.appendonly !== undefined)
  const noAof = known.filter((s) => s.appendonly !== 'yes')
  if (noAof.length > 0)
    problems.push(
      `${noAof.map((s) => s.where).join(', ')} ${noAof.length === 1 ? 'has' : 'have'} appendonly no: ` +
        'a write acknowledged there does not survive a restart of that server (set appendonly yes)',
    )
  const aof = known.filter((s) => s.appendonly === 'yes')
  if (promise.durability === 'leader') {
    // Any replica may lead: each must have a write on its disk before acknowledging it.
    const lazy = aof.filter((s) => s.appendfsync !== 'always')
    if (lazy.length > 0)
      problems.push(
        `durability 'leader' promises a write survives its leader's crash, but ${lazy
          .map((s) => `${s.where} (appendfsync ${s.appendfsync ?? '?'})`)
          .join(', ')} may lose the last second of acknowledged writes on a crash ` +
          "(set appendfsync always, or promise 'majority')",
      )
  } else {
    if (promise.replicas < 2)
      problems.push(
        "durability 'majority' needs at least two replicas per partition (the leader and a follower): with one, a write is only on its leader",
      )
    const none = aof.filter((s) => s.appendfsync === 'no')
    if (none.length > 0)
      problems.push(
        `${none.map((s) => s.where).join(', ')} ${none.length === 1 ? 'has' : 'have'} appendfsync no: ` +
          'the operating system may keep acknowledged writes in memory for half a minute, so a power loss of a majority loses them (set everysec or always)',
      )
    if (!promise.sentinel && promise.replicas >= 2)
      problems.push(
        "durability 'majority' keeps a write when its leader is lost, but without Sentinel nobody promotes the follower that holds it: the partition stops taking writes until an operator does (list the region's sentinels in the config)",
      )
  }
  return problems
}
