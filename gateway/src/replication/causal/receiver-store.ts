/**
 * Where a region keeps what the causal receiver (thesis Algorithm 5) works on: the labels of each
 * other region not yet applied (`Queue_m[k]`), the data of updates waiting for their label (the
 * per-partition shippers deliver it here instead of to the leaders), and `SiteTime_m`. Every
 * gateway of the region takes labels and data into it (whichever the senders reach); one applier,
 * at the region's stabiliser leader, applies from it. In memory for the embedded cluster
 * (`memory-receiver-store.ts`); in Redis for the Redis deployment, so a new leader carries on
 * where the last one stopped (`storage/redis/causal-receiver-store.ts`).
 */
import type { Hlc, Label, LabelEnvelope, LogEntry, ShipEnvelope } from '@causeway/core'
import type { LabelCheckpoint } from './label-link.js'

/** The head of one origin's label queue. */
export interface QueuedLabels {
  /** The first labels of the queue, in stream order. */
  labels: Label[]
  /** Position (in labels ever queued for the origin) of `labels[0]`. */
  first: number
  /** The origin's stable time as it last said it, and the position after which it holds. */
  stable: Hlc
  stableAt: number
}

/** The labels of other regions, per origin. */
export interface LabelQueues {
  /** Where `origin`'s labels stand here (received is at least applied, per partition). */
  labelCheckpoint(origin: number): Promise<LabelCheckpoint>
  /**
   * Appends a checked envelope's labels the queue lacks, in order: a label already received is
   * dropped, one that does not follow on its partition stops the envelope there (and its stable
   * time is not taken).
   */
  append(envelope: LabelEnvelope): Promise<LabelCheckpoint>
  /** Up to `max` labels from the head of `origin`'s queue. */
  head(origin: number, max: number): Promise<QueuedLabels>
  /** How many labels of `origin` are queued. */
  queued(origin: number): Promise<number>
  /**
   * Removes the first `count` labels of `origin`'s queue (applied), if its head is still at
   * position `first` (a leader that lost its lease and finishes a wave another has taken up must
   * not remove labels twice).
   */
  pop(origin: number, first: number, count: number): Promise<void>
  /**
   * Resolves once `origin`'s queue holds labels past position `after` (or a newer stable time
   * than `stable`), or after `ms`.
   */
  waitForLabels(origin: number, after: number, stable: Hlc, ms: number): Promise<void>
}

/** Updates (data) of other regions waiting for their labels, per origin and partition. */
export interface CausalInbox {
  /** The shipper's checkpoint: the highest idx of `origin` in partition `p` here or applied. */
  dataCheckpoint(origin: number, p: number): Promise<number>
  /**
   * Keeps a checked envelope's entries the inbox lacks (idempotent; a gap, or a full inbox,
   * stops it there). Resolves to the new checkpoint.
   */
  stash(p: number, envelope: ShipEnvelope): Promise<number>
  /**
   * The entries of `origin` in partition `p` from `afterIdx + 1` up to `lastIdx` that are here,
   * consecutive (fewer when some have not arrived), and the epoch they were shipped in.
   */
  take(
    origin: number,
    p: number,
    afterIdx: number,
    lastIdx: number,
  ): Promise<{ entries: LogEntry[]; epoch: number }>
  /** Forgets the entries up to `idx` (applied). */
  drop(origin: number, p: number, idx: number): Promise<void>
}

/** `SiteTime_m` where it is kept: raised by the applier, read by every gateway. */
export interface SiteTimeStore {
  /** The stored `SiteTime`, one HLC per region (this region's entry is not used). */
  read(): Promise<Hlc[]>
  /** Raises entry `origin` to `ts` (never lowers it). */
  raise(origin: number, ts: Hlc): Promise<void>
}

/** Everything the receiving side of a region keeps. */
export interface ReceiverStore {
  readonly labels: LabelQueues
  readonly inbox: CausalInbox
  readonly site: SiteTimeStore
}
