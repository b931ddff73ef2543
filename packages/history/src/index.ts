/**
 * `@causeway/history`: records histories of concurrent Causeway clients and checks them for the
 * per-key session guarantees of NuKV (monotonic reads, read-your-writes, monotonic writes,
 * writes-follow-reads) and for convergence.
 * @packageDocumentation
 */
export * from './check.js'
export * from './checks/causal.js'
export * from './checks/convergence.js'
export * from './checks/levels.js'
export * from './checks/monotonic-reads.js'
export * from './checks/monotonic-writes.js'
export * from './checks/read-your-writes.js'
export * from './checks/writes-follow-reads.js'
export * from './final-state.js'
export * from './history.js'
export * from './kv-client.js'
export * from './prng.js'
export * from './recorder.js'
export * from './session-order.js'
export * from './sibling-order.js'
export * from './version.js'
export * from './violation.js'
export * from './workload.js'
