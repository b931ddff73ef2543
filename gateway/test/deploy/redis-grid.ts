/**
 * Real Redis servers laid out as a cluster (regions × partitions × replicas, followers REPLICAOF
 * their leader) and the cluster config that names them, for tests of gateways over Redis.
 */
import { partitionOf } from '@causeway/core'
import type { ClusterConfigFile } from '../../src/config/cluster-config.js'
import { type RedisServer, startRedis } from '../support/redis-server.js'

/** `grid[d][p][i]`: the server of replica `i` of partition `p` in region `d` (0 leads). */
export type RedisGrid = RedisServer[][][]

/** Starts the servers of a cluster; followers are synced replicas of their leader on return. */
export async function startRedisGrid(
  regions: number,
  partitions: number,
  replicas: number,
): Promise<RedisGrid> {
  const grid: RedisGrid = await Promise.all(
    Array.from({ length: regions }, () =>
      Promise.all(Array.from({ length: partitions }, async () => [await startRedis()])),
    ),
  )
  await Promise.all(
    grid.flat().map(async (partition) => {
      const leader = partition[0]!
      for (let i = 1; i < replicas; i++) {
        const follower = await startRedis()
        await follower.replicaOf(leader)
        partition.push(follower)
      }
    }),
  )
  return grid
}

/** A config file for `grid`, with the given gateways per region (the first is the region URL). */
export function gridConfig(
  grid: RedisGrid,
  gateways: readonly (readonly string[])[],
  extra: Partial<ClusterConfigFile> = {},
): ClusterConfigFile {
  return {
    format: 1,
    cluster: 'test-cluster',
    partitions: grid[0]!.length,
    regions: grid.map((region, d) => ({
      name: `r${d}`,
      url: gateways[d]![0]!,
      gateways: [...gateways[d]!],
      replicas: region.map((partition) => partition.map((s) => s.url)),
    })),
    ...extra,
  }
}

/** `count` fresh keys of partition `p` (of `partitions`), starting with `prefix`. */
export function keysOf(p: number, partitions: number, count: number, prefix: string): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < count && i < 100_000; i++) {
    const key = `${prefix}${i}`
    if (partitionOf(key, partitions) === p) keys.push(key)
  }
  return keys
}
