/**
 * The sets of a {@link LevelPartitionReplica} as the storage contract has them: reads from
 * {@link LevelSets}, writes through the replica's commit queue (a set write is a `set-op` log
 * entry, planned and stored in the replica's batch).
 */
import type { Hlc, SetOpEntry } from '@causeway/core'
import { AbstractSetReplica, type SetReplicaOwner } from '../abstract-set-replica.js'
import type {
  SetMembership,
  SetReplicaStream,
  SetScan,
  SetScanOptions,
  SetSize,
  SetWrite,
} from '../set-replica.js'
import type { LevelSets } from './level-sets.js'

/** What the sets need of their LevelDB replica. */
export interface LevelSetReplicaHost extends SetReplicaOwner {
  /** Throws when the replica failed (a batch did not commit), on top of `checkOpen`. */
  checkNotFailed(): void
  /** Queues a checked set write in the replica's commit. */
  write(name: string, write: SetWrite, dt: Hlc): Promise<SetOpEntry>
}

/** The sets of one LevelDB replica. */
export class LevelSetReplica extends AbstractSetReplica {
  readonly #host: LevelSetReplicaHost
  readonly #sets: LevelSets

  constructor(host: LevelSetReplicaHost, sets: LevelSets) {
    super(host)
    this.#host = host
    this.#sets = sets
  }

  protected _write(name: string, write: SetWrite, dt: Hlc): Promise<SetOpEntry> {
    return this.#host.write(name, write, dt)
  }

  protected async _has(name: string, element: string): Promise<SetMembership> {
    this.#host.checkNotFailed()
    return this.#sets.has(name, element)
  }

  protected async _size(name: string): Promise<SetSize> {
    this.#host.checkNotFailed()
    return this.#sets.size(name)
  }

  protected _scan(name: string, options: SetScanOptions): SetScan {
    this.#host.checkNotFailed()
    return this.#sets.scan(name, options)
  }

  protected async _stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'>,
  ): Promise<SetReplicaStream> {
    this.#host.checkNotFailed()
    return this.#sets.stream(name, options)
  }
}
