/**
 * Which operations a check holds to its guarantee: those whose level asks for it, or all of them
 * when checking "as if" every call were at `session` (the negative control: it shows what a
 * weaker level actually lets through).
 */
import {
  readNeedsReads,
  readNeedsWrites,
  writeFollowsReads,
  writeFollowsWrites,
} from '@causeway/core'
import type { ReadOperation, WriteOperation } from '../history.js'

/** Options of every check. */
export interface CheckOptions {
  /**
   * Hold every operation to the guarantee, whatever its level.
   * @default false
   */
  asIfSession?: boolean
  /**
   * Hold every operation to causality across keys (check `causal`), whatever its level: the
   * negative control that shows what FIFO shipping lets through.
   * @default false
   */
  asIfCausal?: boolean
}

/** Whether `read` promised monotonic reads. */
export function promisesMonotonicReads(read: ReadOperation, options: CheckOptions): boolean {
  return options.asIfSession === true || readNeedsReads(read.level)
}

/** Whether `read` promised read-your-writes. */
export function promisesReadYourWrites(read: ReadOperation, options: CheckOptions): boolean {
  return options.asIfSession === true || readNeedsWrites(read.level)
}

/** Whether `write` promised monotonic writes. */
export function promisesMonotonicWrites(write: WriteOperation, options: CheckOptions): boolean {
  return options.asIfSession === true || writeFollowsWrites(write.level)
}

/** Whether `write` promised writes-follow-reads. */
export function promisesWritesFollowReads(write: WriteOperation, options: CheckOptions): boolean {
  return options.asIfSession === true || writeFollowsReads(write.level)
}
