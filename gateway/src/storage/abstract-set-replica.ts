/**
 * The storage contract of the sets (Bigsets) of one partition replica, shaped like
 * `AbstractPartitionReplica`: each public method refuses calls while its replica is not open and
 * checks its input once (`replica-input.ts`, `set-writes.ts`), then calls the `_method` a backend
 * implements with exactly the documented arguments. See `set-replica.ts` for what a set write and
 * a set read are.
 */
import { type Hlc, type SetOpEntry, checkElement } from '@causeway/core'
import { checkDependencyTime, checkScanOptions, checkSetName } from './replica-input.js'
import type {
  SetMembership,
  SetReplicaStream,
  SetScan,
  SetScanOptions,
  SetSize,
  SetWrite,
} from './set-replica.js'
import { checkSetWrite } from './set-writes.js'

/** What the sets need of their replica: whether it takes calls now. */
export interface SetReplicaOwner {
  /** Throws the error calls are refused with now, if any (`AbstractPartitionReplica.checkOpen`). */
  checkOpen(): void
}

/** The sets of one partition replica. */
export abstract class AbstractSetReplica {
  readonly #owner: SetReplicaOwner

  constructor(owner: SetReplicaOwner) {
    this.#owner = owner
  }

  /**
   * Leader only: plans the write against the set's current clocks (minting dots under the
   * region's actor), appends it to the log as a `set-op` entry with `idx = ++counter` and stores
   * it, atomically and durably before resolving. Resolves to the entry (its `setDelta` is what
   * ships).
   * @throws `INVALID_KEY` for a bad name, `INVALID_ELEMENT` or `INVALID_CONTEXT` for a bad
   * element or context, `INVALID_REQUEST` for an unknown operation, `INVALID_HLC` for a bad `dt`.
   */
  write(name: string, write: SetWrite, dt: Hlc): Promise<SetOpEntry> {
    try {
      this.#owner.checkOpen()
      checkSetName(name)
      checkSetWrite(write)
      checkDependencyTime(dt)
      return this._write(name, write, dt)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The element's live dots and the stamp, read together. */
  has(name: string, element: string): Promise<SetMembership> {
    try {
      this.#owner.checkOpen()
      checkSetName(name)
      checkElement(element)
      return this._has(name, element)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The number of elements (kept exactly with every write) and the stamp. */
  size(name: string): Promise<SetSize> {
    try {
      this.#owner.checkOpen()
      checkSetName(name)
      return this._size(name)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The elements in order from `from`/`after`, up to `limit`, streamed from the store. Throws at
   * once (not when iterated) for a replica that is not open or bad options.
   */
  scan(name: string, options: SetScanOptions = {}): SetScan {
    this.#owner.checkOpen()
    checkSetName(name)
    checkScanOptions(options)
    return this._scan(name, options)
  }

  /** This replica's set-clock and ordered entries, for a merge across replicas. */
  stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'> = {},
  ): Promise<SetReplicaStream> {
    try {
      this.#owner.checkOpen()
      checkSetName(name)
      checkScanOptions(options)
      return this._stream(name, options)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  protected abstract _write(name: string, write: SetWrite, dt: Hlc): Promise<SetOpEntry>
  protected abstract _has(name: string, element: string): Promise<SetMembership>
  protected abstract _size(name: string): Promise<SetSize>
  protected abstract _scan(name: string, options: SetScanOptions): SetScan
  protected abstract _stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'>,
  ): Promise<SetReplicaStream>
}
