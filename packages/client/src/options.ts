/**
 * The options of `connect()` and of each call, with their defaults, and the checks that turn a
 * bad option into a typed error before anything is sent.
 */
import {
  CausewayError,
  type Durability,
  type ReadLevel,
  type ReplicaChoice,
  type SessionJSON,
  type Session,
  type WriteLevel,
  DURABILITIES,
  READ_LEVELS,
  REPLICA_CHOICES,
  WRITE_LEVELS,
  isReadLevel,
  isWriteLevel,
} from '@causeway/core'
import { READ_FALLBACKS, type ReadFallback } from './read-retry.js'
import type { RegionRef } from './topology.js'
import type { PersistStore } from './offline/outbox-types.js'
import type { Transport } from './transport.js'

/** Client-wide defaults; each call may override them. */
export interface CallDefaults {
  /** Read level. @default 'session' */
  read?: ReadLevel
  /** Write level. @default 'session' */
  write?: WriteLevel
  /**
   * Deadline of a whole call in ms, retries included. A read spends it waiting for a replica that
   * covers the session (see the retry policy in the README).
   * @default the cluster's `limits.defaultTimeoutMs` (5000)
   */
  timeoutMs?: number
  /** Which replica serves a read. @default 'any' (the gateway picks one that needs no wait) */
  replica?: ReplicaChoice
  /** When a write is acknowledged. @default 'leader' */
  durability?: Durability
  /**
   * Whether a read that gets `SESSION_NOT_AVAILABLE` is asked again (of the region's leader, and
   * as `fallback` says, of the home region) before the error is thrown. `false` sends exactly one
   * request, whatever `fallback` says, and gives it the whole deadline.
   * @default true
   */
  retry?: boolean
  /**
   * Where a read goes when the region it was sent to cannot serve it in time
   * (`SESSION_NOT_AVAILABLE`) or is unavailable (network error, 5xx): `'home'` asks the home
   * region, inside the same deadline, with the same session vector; `'none'` throws instead.
   * With `'home'`, a read in another region may wait there for the first half of its deadline
   * and the home region gets the rest; with `'none'` it waits there for all of it.
   *
   * The default is `'home'` because the home region is where this session's own writes are
   * made, so it can usually serve at once: a lagging region then costs a round trip home rather
   * than an error, and the guarantee is the same. Choose `'none'` when a read must be served by
   * the region you name (data residency, measuring a region) or a late answer from it is better
   * than one from home.
   * @default 'home'
   */
  fallback?: ReadFallback
  /**
   * What a call does when the gateway answers `EPOCH_MISMATCH`: the session depends on writes a
   * failover lost (a partition leader changed before they reached a majority or another region).
   * `'throw'` rejects with an `EpochMismatchError` (its `lost` lists them); the app decides, e.g.
   * tells the user, then calls `db.session.rebase(err.partition, err.lost)` and tries again.
   * `'rebase'` does that by itself: it re-bases the partition's positions on what the failover
   * kept and sends the call once more (the lost writes stay lost; everything kept stays
   * guaranteed). See `docs/protocol.md` (epochs).
   * @default 'throw'
   */
  onEpochMismatch?: EpochMismatchPolicy
}

/** What a call does on `EPOCH_MISMATCH` ({@link CallDefaults.onEpochMismatch}). */
export type EpochMismatchPolicy = 'throw' | 'rebase'

/** Options of `connect()`. */
export interface ConnectOptions {
  /** URL of a gateway, e.g. `http://localhost:7070`. Its region is the home region. */
  url: string
  /**
   * A session to continue: a `Session`, its JSON object or its JSON string (as saved with
   * `JSON.stringify(db.session)`). It is validated against the cluster; a malformed session or one
   * of another cluster makes `connect` reject.
   * @default a fresh session
   */
  session?: Session | SessionJSON | string
  /** Defaults of every call. */
  defaults?: CallDefaults
  /**
   * The home region (name or id): where calls go unless they name a region, and where a read falls
   * back to when another region cannot serve it in time.
   * @default the region of the gateway at `url`
   */
  region?: RegionRef
  /** How requests are sent. @default fetchTransport() */
  transport?: Transport
  /** Extra headers sent with every request. @default {} */
  headers?: Record<string, string>
  /**
   * Sent as `authorization: Bearer <apiKey>`, only to the origin of `url` and those of
   * `trustedOrigins` (a call to a region elsewhere rejects with `UNTRUSTED_ORIGIN`).
   * @default none
   */
  apiKey?: string
  /**
   * Origins (absolute http(s) URLs; only their origin counts) besides `url`'s that may receive
   * credentials: the `authorization` header (from `apiKey`, or a token in `headers`),
   * `proxy-authorization`, `cookie` and `x-api-key`. Region URLs come from the gateway's
   * topology, and whoever can alter that reply could otherwise collect the key: list the other
   * regions' gateways here, e.g. `['https://eu.example.com']`. Calls without credentials go to
   * any region.
   * @default [] (only the origin of `url`)
   */
  trustedOrigins?: readonly string[]
  /**
   * Most bytes of one reply body, and of one change-feed event: a transport stops reading a
   * longer reply and the call rejects with `REPLY_TOO_LARGE` (a write's outcome is then unknown).
   * A custom `transport` should honour `TransportRequest.maxReplyBytes` as the built-in ones do.
   * @default 33554432 (32 MiB)
   */
  maxReplyBytes?: number
  /** Aborts `connect` itself (the topology fetch). */
  signal?: AbortSignal
  /**
   * Keep this client's state on the device, so it works offline (see `docs/offline.md`): the
   * session, the topology, a read cache of the keys read or written, and an outbox of writes not
   * yet applied. Give an `abstract-level` database (`new BrowserLevel('app')`,
   * `new ClassicLevel(dir)`, `new MemoryLevel()`, ...), or a name: in a browser the name of an
   * IndexedDB database (`browser-level`, loaded only then), in Node (`@causeway/client/node`) a
   * directory (`classic-level`). With a store that holds a topology, `connect` resolves without
   * a network. Clients (tabs) given the same store share its outbox; one of them replays it.
   *
   * A store given as an object stays open on `close()`; one opened from a name is closed.
   * `false` keeps nothing: every call needs the gateway.
   * @default false
   */
  persist?: PersistStore | string | false
}

/** Options of `get`. */
export interface ReadOptions {
  /** Read level. @default defaults.read ?? 'session' */
  read?: ReadLevel
  /** Region (name or id) whose gateway serves this read. @default the home region */
  region?: RegionRef
  /** Which replica serves it. @default defaults.replica ?? 'any' */
  replica?: ReplicaChoice
  /** Deadline of the whole call in ms. @default defaults.timeoutMs ?? limits.defaultTimeoutMs */
  timeoutMs?: number
  /** Retry on `SESSION_NOT_AVAILABLE`. @default defaults.retry ?? true */
  retry?: boolean
  /** On `EPOCH_MISMATCH`: throw, or re-base and retry. @default defaults.onEpochMismatch ?? 'throw' */
  onEpochMismatch?: EpochMismatchPolicy
  /**
   * Ask the home region when this read's region cannot serve it in time or is unavailable
   * (`'home'`), or throw (`'none'`); see {@link CallDefaults.fallback}.
   * @default defaults.fallback ?? 'home'
   */
  fallback?: ReadFallback
  /** Aborts the call; it then rejects with the signal's reason. */
  signal?: AbortSignal
}

/** Options of `put` and `delete`. */
export interface WriteOptions {
  /** Write level. @default defaults.write ?? 'session' */
  write?: WriteLevel
  /** Region (name or id) whose leader takes this write. @default the home region */
  region?: RegionRef
  /** When the write is acknowledged. @default defaults.durability ?? 'leader' */
  durability?: Durability
  /** Deadline of the call in ms. @default defaults.timeoutMs ?? limits.defaultTimeoutMs */
  timeoutMs?: number
  /** Aborts the call; it then rejects with the signal's reason (the write may have been applied). */
  signal?: AbortSignal
  /** On `EPOCH_MISMATCH`: throw, or re-base and retry. @default defaults.onEpochMismatch ?? 'throw' */
  onEpochMismatch?: EpochMismatchPolicy
  /**
   * Siblings namespaces only: the causal context of a read (`r.context`, or a write's
   * `context`). The write supersedes exactly the versions that read returned; versions it did not
   * see stay as siblings. `null` makes the write blind (a new sibling) whatever the value.
   * @default the context remembered for `value` when it is the very object or array that this
   * client's last read of the key returned as its only value, or last wrote to the key; otherwise
   * none (a blind write). A copy (`{ ...r.value }`) is a new object: pass `r.context` with it.
   */
  context?: string | null
}

/** Options of `resolve`: those of its read, and of its write. */
export interface ResolveOptions extends Omit<ReadOptions, 'retry'> {
  /** Write level of the merged value. @default defaults.write ?? 'session' */
  write?: WriteLevel
  /** When the merged write is acknowledged. @default defaults.durability ?? 'leader' */
  durability?: Durability
  /** Write back even when the key has a single version (a read-modify-write). @default false */
  force?: boolean
}

/** Defaults with every field filled in. */
export type ResolvedDefaults = Required<CallDefaults>

function list(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(', ')
}

export function checkRead(level: unknown): ReadLevel {
  if (!isReadLevel(level)) {
    throw new CausewayError(
      'INVALID_LEVEL',
      `unknown read level ${JSON.stringify(level)}; use one of ${list(READ_LEVELS)}`,
    )
  }
  return level
}

export function checkWrite(level: unknown): WriteLevel {
  if (!isWriteLevel(level)) {
    throw new CausewayError(
      'INVALID_LEVEL',
      `unknown write level ${JSON.stringify(level)}; use one of ${list(WRITE_LEVELS)}`,
    )
  }
  return level
}

export function checkReplica(replica: unknown): ReplicaChoice {
  if (!(REPLICA_CHOICES as readonly unknown[]).includes(replica)) {
    throw new CausewayError(
      'INVALID_OPTION',
      `unknown replica ${JSON.stringify(replica)}; use one of ${list(REPLICA_CHOICES)}`,
    )
  }
  return replica as ReplicaChoice
}

export function checkDurability(durability: unknown): Durability {
  if (!(DURABILITIES as readonly unknown[]).includes(durability)) {
    throw new CausewayError(
      'INVALID_OPTION',
      `unknown durability ${JSON.stringify(durability)}; use one of ${list(DURABILITIES)}`,
    )
  }
  return durability as Durability
}

export function checkTimeout(timeoutMs: unknown, maxTimeoutMs: number): number {
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isInteger(timeoutMs) ||
    timeoutMs <= 0 ||
    timeoutMs > maxTimeoutMs
  ) {
    throw new CausewayError(
      'INVALID_OPTION',
      `timeoutMs must be an integer in 1..${maxTimeoutMs}, not ${JSON.stringify(timeoutMs)}`,
    )
  }
  return timeoutMs
}

export function checkRetry(retry: unknown): boolean {
  if (typeof retry !== 'boolean') {
    throw new CausewayError(
      'INVALID_OPTION',
      `retry must be true or false, not ${JSON.stringify(retry)}`,
    )
  }
  return retry
}

export function checkEpochMismatch(policy: unknown): EpochMismatchPolicy {
  if (policy !== 'throw' && policy !== 'rebase') {
    throw new CausewayError(
      'INVALID_OPTION',
      `onEpochMismatch must be 'throw' or 'rebase', not ${JSON.stringify(policy)}`,
    )
  }
  return policy
}

export function checkFallback(fallback: unknown): ReadFallback {
  if (!(READ_FALLBACKS as readonly unknown[]).includes(fallback)) {
    throw new CausewayError(
      'INVALID_OPTION',
      `unknown fallback ${JSON.stringify(fallback)}; use one of ${list(READ_FALLBACKS)}`,
    )
  }
  return fallback as ReadFallback
}

/** Fills in and checks the client-wide defaults once, at connect. */
export function resolveDefaults(
  defaults: CallDefaults | undefined,
  limits: { defaultTimeoutMs: number; maxTimeoutMs: number },
): ResolvedDefaults {
  const d = defaults ?? {}
  return {
    read: checkRead(d.read ?? 'session'),
    write: checkWrite(d.write ?? 'session'),
    timeoutMs: checkTimeout(d.timeoutMs ?? limits.defaultTimeoutMs, limits.maxTimeoutMs),
    replica: checkReplica(d.replica ?? 'any'),
    durability: checkDurability(d.durability ?? 'leader'),
    retry: checkRetry(d.retry ?? true),
    fallback: checkFallback(d.fallback ?? 'home'),
    onEpochMismatch: checkEpochMismatch(d.onEpochMismatch ?? 'throw'),
  }
}
