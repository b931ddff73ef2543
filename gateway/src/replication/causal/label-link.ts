/**
 * How a region's stabiliser leader reaches another region's receiver with its labels: in process
 * (the embedded cluster) or over HTTP (`POST /v1/internal/causal/labels/:origin`). A link is
 * FIFO, like a shipping link: envelopes arrive in the order they were sent, so the shipper may
 * pipeline them. The receiver's checkpoint says where the sender resumes after any failure.
 */
import type { Hlc, LabelEnvelope } from '@causeway/core'

/** How far a destination got with one origin's labels. */
export interface LabelCheckpoint {
  /** Per partition: the origin's highest idx whose label the destination has (queued or applied). */
  received: number[]
  /** Per partition: the origin's highest idx the destination has applied. */
  applied: number[]
  /** The latest stable time of the origin the destination has taken. */
  stable: Hlc
}

/** A FIFO channel from one region's stabiliser leader to another region's receiver. */
export interface LabelLink {
  checkpoint(): Promise<LabelCheckpoint>
  /** Delivers `envelope` after every envelope sent before it; resolves to the new checkpoint. */
  send(envelope: LabelEnvelope): Promise<LabelCheckpoint>
  /** Drops what is in flight; pending calls reject. */
  close(): Promise<void>
}

/** What a label link delivers to: the receiving side of a region (every gateway has it). */
export interface LabelReceiver {
  /** Where `origin`'s labels stand here. */
  labelCheckpoint(origin: number): Promise<LabelCheckpoint>
  /**
   * Takes an envelope of another region's labels (checked whole first: `INVALID_LABEL`,
   * `INVALID_VECTOR`, `INVALID_HLC`, `CLOCK_SKEW_EXCEEDED`, `UNSUPPORTED_LOG_FORMAT`); labels it
   * has already are dropped, and a label that does not follow on (a gap) stops the envelope
   * there. Resolves to the new checkpoint.
   */
  receiveLabels(envelope: unknown): Promise<LabelCheckpoint>
}
