/**
 * The replica compliance suite on a Redis replica.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { RedisPartitionReplica } from '../../../src/storage/redis/index.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { replicaCompliance } from '../replica-compliance.js'

// One server for the whole suite; every store is a namespace of its own on it.
let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

replicaCompliance('redis', async (shape) => {
  const namespace = `compliance-${randomUUID()}`
  return {
    replica: (options) =>
      new RedisPartitionReplica({ ...shape, ...options, url: server.url, namespace }),
    destroy: async () => {},
  }
})
