/**
 * The replica compliance suite on a Redis replica.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { RedisPartitionReplica, ReplicaKeys } from '../../../src/storage/redis/index.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { type ReplicaStoreFactory, replicaCompliance } from '../replica-compliance.js'
import { txCompliance } from '../tx-compliance.js'

// One server for the whole suite; every store is a namespace of its own on it.
let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

const redisStore: ReplicaStoreFactory = async (shape) => {
  const namespace = `compliance-${randomUUID()}`
  const keys = new ReplicaKeys(namespace, shape.region, shape.partition)
  return {
    replica: (options) =>
      new RedisPartitionReplica({ ...shape, ...options, url: server.url, namespace }),
    async corrupt(key, kind, text) {
      if (kind === 'siblings') await server.command('SET', keys.siblings(key), text)
      else await server.command('HSET', keys.version(key), 'ts', text)
    },
    destroy: async () => {},
  }
}

replicaCompliance('redis', redisStore)
txCompliance('redis', redisStore)
