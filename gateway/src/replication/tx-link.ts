/**
 * How a region's applied transactions reach another region, each as one unit (`TxShipper` is the
 * sending end): in process for the embedded cluster (`InProcessTxLink`), over HTTP between the
 * gateways of a Redis deployment (`HttpTxLink`). FIFO, like the partition links.
 */
import type { TxShipment } from '@causeway/core'

/** A FIFO channel of one region's transactions to another region's transaction log. */
export interface TxLink {
  /** The destination log's checkpoint of the origin: the highest origin tid it has taken. */
  checkpoint(): Promise<number>
  /** Delivers a shipment (after every one sent before); resolves to the new checkpoint. */
  send(shipment: TxShipment): Promise<number>
  /** Drops what is in flight. */
  close(): Promise<void>
}

/** The receiving side of transaction shipping, for one region: its transaction log. */
export interface TxReceiver {
  /** The local log's checkpoint of `origin`. */
  txCheckpoint(origin: number): Promise<number>
  /** Checks a shipment whole (`checkTxShipment`) and appends its units; resolves to the checkpoint. */
  receiveTransactions(origin: number, shipment: unknown): Promise<number>
}
