/**
 * `@causeway/client`: the Causeway SDK. Per-call session guarantees (NuKV) over a partitioned,
 * replicated, multi-region key-value store. Runs in browsers and Node 20+ (fetch only, no Node
 * built-ins); `@causeway/client/node` adds Node-only extras.
 * @packageDocumentation
 */
export { connect } from './connect.js'
export {
  Causeway,
  type CausewayInit,
  type ReadResult,
  type ResolveResult,
  type SessionListener,
  type Sibling,
  type WriteOutcome,
  type WriteResult,
} from './client.js'
export type {
  CausewayEventName,
  CausewayEvents,
  CausewayListener,
  ConflictSibling,
} from './offline/events.js'
export type {
  FailedOp,
  OpKind,
  PendingOp,
  PendingWrite,
  PersistBatchOp,
  PersistStore,
  PersistSublevel,
  QueuedElement,
  SyncResult,
} from './offline/outbox-types.js'
export type {
  Change,
  ChangeStream,
  WatchListener,
  WatchOptions,
  WatchTarget,
} from './watch/watch-handle.js'
export {
  CausewaySet,
  type SetElement,
  type SetHasResult,
  type SetReadOptions,
  type SetScanOptions,
  type SetWriteOptions,
} from './set.js'
export type {
  CallDefaults,
  ConnectOptions,
  EpochMismatchPolicy,
  ReadOptions,
  ResolveOptions,
  WriteOptions,
} from './options.js'
export type { ReadFallback } from './read-retry.js'
export type { TriedAttempt } from './client-access.js'
export type { RegionRef, RegionRoute } from './topology.js'
export {
  type FetchTransportOptions,
  type Transport,
  type TransportRequest,
  type TransportResponse,
  fetchTransport,
} from './transport.js'
export {
  type SessionChannel,
  type SessionMessage,
  type SessionSharing,
  type SessionSource,
  type ShareSessionOptions,
  shareSession,
} from './share-session.js'
export {
  CausewayError,
  DURABILITIES,
  ERROR_CODES,
  READ_LEVELS,
  REPLICA_CHOICES,
  Session,
  SessionNotAvailableError,
  EpochMismatchError,
  RateLimitedError,
  OfflineError,
  StorageFullError,
  WRITE_LEVELS,
  type Durability,
  type ErrorCode,
  type Hlc,
  type ReadLevel,
  type ReplicaChoice,
  type SessionJSON,
  type LostPosition,
  type ConflictMode,
  type Topology,
  type WriteLevel,
} from '@causeway/core'
