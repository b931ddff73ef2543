/** The Redis storage backend: one partition replica per `redis-server` (leader or REPLICAOF follower). */
export { RedisPartitionReplica } from './redis-partition-replica.js'
export type { RedisPartitionReplicaOptions } from './redis-partition-replica.js'
export { ReplicaKeys, encodeKeyPart } from './key-layout.js'
