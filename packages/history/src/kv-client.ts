/**
 * The slice of the SDK the recorder and the workload use. `@causeway/client`'s `Causeway` fits
 * it; tests may pass anything else that does (a fake, another backend's client).
 */
import type { Durability, ReadLevel, WriteLevel } from '@causeway/core'

/** Options of a recorded read: the level and the region are always explicit. */
export interface KvReadOptions {
  read: ReadLevel
  /** Region id the read is sent to. */
  region: number
  /** Deadline of the call in ms. @default the client's */
  timeoutMs?: number
}

/** Options of a recorded write. */
export interface KvWriteOptions {
  write: WriteLevel
  /** Region id whose leader takes the write. */
  region: number
  /** Deadline of the call in ms. @default the client's */
  timeoutMs?: number
  /** When the write is acknowledged. @default the client's */
  durability?: Durability
  /**
   * Siblings namespaces: the causal context of a read (or of a write's reply) the write
   * supersedes; `null` or absent for a blind write.
   */
  context?: string | null
}

/** One version a read of a siblings key returned. */
export interface KvSibling {
  ts: string
  dc: number
  deleted: boolean
  value?: unknown
}

/** What a read resolves to. `region` is the region that served it (after any fallback). */
export interface KvReadResult {
  found: boolean
  value?: unknown
  ts?: string
  dc?: number
  region?: number
  /** Siblings namespaces: every version read, tombstones included. */
  versions?: readonly KvSibling[] | undefined
  /** Siblings namespaces: the causal context of the read. */
  context?: string | undefined
}

/** What a write resolves to. */
export interface KvWriteResult {
  ts: string
  dc: number
  idx: number
  region?: number
  /** Siblings namespaces: the context of what the write superseded plus itself, if given. */
  context?: string | undefined
}

/** A key-value client with per-call levels and regions, as `connect()` returns. */
export interface KvClient {
  get(key: string, options: KvReadOptions): Promise<KvReadResult>
  put(key: string, value: unknown, options: KvWriteOptions): Promise<KvWriteResult>
  delete(key: string, options: KvWriteOptions): Promise<KvWriteResult>
  close?(): Promise<void> | void
}
