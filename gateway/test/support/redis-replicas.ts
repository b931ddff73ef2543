/**
 * Redis partition replicas for the Redis storage tests: each on a namespace of its own, closed
 * after the test that made it.
 */
import { randomUUID } from 'node:crypto'
import { afterEach } from 'vitest'
import {
  RedisPartitionReplica,
  type RedisPartitionReplicaOptions,
} from '../../src/storage/redis/index.js'
import type { RedisServer } from './redis-server.js'

/**
 * Registers the closing hook and returns `replicaOn(server, options)`: a replica of region 0 of
 * 2, replica 0 of `defaults.partition` (0), in a fresh namespace starting with `label`.
 */
export function replicasClosedAfterEach(
  label: string,
  defaults: Partial<RedisPartitionReplicaOptions> = {},
): (target: RedisServer, options?: Partial<RedisPartitionReplicaOptions>) => RedisPartitionReplica {
  const opened: RedisPartitionReplica[] = []
  afterEach(async () => {
    for (const r of opened.splice(0)) await r.close()
  })
  return (target, options = {}) => {
    const r = new RedisPartitionReplica({
      url: target.url,
      namespace: `${label}-${randomUUID()}`,
      region: 0,
      partition: 0,
      replica: 0,
      regions: 2,
      ...defaults,
      ...options,
    })
    opened.push(r)
    return r
  }
}
