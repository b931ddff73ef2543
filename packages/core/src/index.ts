/**
 * `@causeway/core`: the pure, isomorphic pieces shared by the SDK and the gateway. No I/O and no
 * clock reads of its own: the wall clock is injected. The JSON Schemas of the protocol are in
 * `@causeway/core/schemas`; this entry has only their types, so the SDK (and a browser bundle or
 * a CommonJS consumer of it) never loads the schema library.
 * @packageDocumentation
 */
export * from './causal-clock.js'
export * from './causal-label.js'
export * from './consistency.js'
export * from './counter-bounds.js'
export * from './epoch-history.js'
export * from './errors.js'
export * from './hlc.js'
export * from './limits.js'
export * from './log-entry.js'
export * from './log-entry-check.js'
export * from './namespaces.js'
export * from './partitioner.js'
export * from './protocol.js'
export * from './session.js'
export * from './vector.js'
export type {
  CausalStatus,
  ChangeEvent,
  Op,
  OpError,
  OpResult,
  OpsBody,
  OpsReply,
  PutBody,
  QuarantineStatus,
  ReadQuery,
  ReadReply,
  ReplicaStatus,
  ShipperStatus,
  LeaderStatus,
  DivergenceStatus,
  SiblingReply,
  Status,
  Topology,
  WatchQuery,
  WriteQuery,
  WriteReply,
} from './wire.js'
export * from './causal-context.js'
export * from './dvvset.js'
export * from './sibling-set-codec.js'
export * from './bigset/index.js'
export * from './set-limits.js'
export type {
  SetHasQuery,
  SetHasReply,
  SetScanQuery,
  SetScanReply,
  SetSizeQuery,
  SetSizeReply,
  SetWriteBody,
  SetWriteElement,
  SetWriteQuery,
} from './set-wire.js'
export * from './op-id.js'
export * from './ship-envelope.js'
export * from './version-order.js'
export * from './commit-writes.js'
export * from './transaction.js'
export * from './tx-shipment.js'
export type {
  TxCommitBody,
  TxCommitPart,
  TxCommitQuery,
  TxCommitReply,
  TxReadBody,
  TxReadItem,
  TxReadQuery,
  TxReadReply,
} from './tx-wire.js'
