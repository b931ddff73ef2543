/**
 * A {@link LabelLink} inside one process (the embedded cluster), with the cluster's emulated
 * one-way WAN delay each way: an envelope reaches the receiver `delayMs` after it was sent and the
 * answer comes back as late, in FIFO order.
 */
import type { LabelEnvelope } from '@causeway/core'
import { DelayedRoundTrip } from '../delayed-round-trip.js'
import type { LabelCheckpoint, LabelLink, LabelReceiver } from './label-link.js'

/** A label link to a receiver of this process. */
export class InProcessLabelLink implements LabelLink {
  readonly #origin: number
  readonly #receiver: LabelReceiver
  readonly #wan: DelayedRoundTrip

  constructor(origin: number, receiver: LabelReceiver, delayMs = 0) {
    this.#origin = origin
    this.#receiver = receiver
    this.#wan = new DelayedRoundTrip(delayMs)
  }

  checkpoint(): Promise<LabelCheckpoint> {
    return this.#wan.call(() => this.#receiver.labelCheckpoint(this.#origin))
  }

  send(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    return this.#wan.call(() => this.#receiver.receiveLabels(envelope))
  }

  async close(): Promise<void> {
    this.#wan.close()
  }
}
