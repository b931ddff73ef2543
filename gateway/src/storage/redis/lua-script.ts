/**
 * A Lua script run with `EVALSHA`, falling back to `EVAL` (which also loads it) when the server
 * does not know it yet: after a restart, a failover or `SCRIPT FLUSH`.
 */
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

/** One Lua script and its SHA-1. */
export class LuaScript {
  readonly sha: string

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex')
  }

  /** Runs the script with `keys` as `KEYS` and `args` as `ARGV`. */
  async run(client: Redis, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return await client.eval(this.lua, keys.length, ...keys, ...args)
    }
  }
}
