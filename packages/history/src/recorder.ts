/**
 * Records calls as they happen: wrap a client, use the wrapper as the client, and every call is
 * appended to the history when it settles (so history order is settle order), with its interval,
 * level, region and reply or error code.
 */
import type {
  ClientId,
  FinalSiblings,
  FinalState,
  History,
  Operation,
  OperationError,
  ReadReplyRecord,
  SiblingRecord,
  WriteReplyRecord,
} from './history.js'
import type {
  KvClient,
  KvReadOptions,
  KvReadResult,
  KvWriteOptions,
  KvWriteResult,
} from './kv-client.js'

/** What a call is, before it settles: everything but its timing and outcome. */
type CallFields = Pick<Operation, 'client' | 'op' | 'key' | 'level' | 'region'> & {
  value?: unknown
  context?: string
  durability?: KvWriteOptions['durability']
  reply?: unknown
}

/** Options of a {@link HistoryRecorder}. */
export interface HistoryRecorderOptions {
  /**
   * The monotonic clock of `invokedAt` and `completedAt`, shared by every session.
   * @default performance.now
   */
  now?: () => number
}

/** Collects the operations of any number of sessions into one history. */
export class HistoryRecorder {
  readonly #operations: Operation[] = []
  readonly #now: () => number

  constructor(options: HistoryRecorderOptions = {}) {
    this.#now = options.now ?? (() => performance.now())
  }

  /** The operations recorded so far, in the order they settled. */
  get operations(): readonly Operation[] {
    return this.#operations
  }

  /**
   * A client that calls `db` and records each call as an operation of session `client`. Calls
   * resolve and reject exactly as `db`'s do. `close` is not forwarded: the owner of `db` closes it.
   */
  wrap(client: ClientId, db: KvClient): KvClient {
    return {
      get: (key, options) =>
        this.#record(
          () => db.get(key, options),
          (r) => ({
            client,
            op: 'get',
            key,
            level: options.read,
            region: servedBy(r, options),
            reply: r && readReply(r),
          }),
        ),
      put: (key, value, options) =>
        this.#record(
          () => db.put(key, value, options),
          (r) => ({
            client,
            op: 'put',
            key,
            value,
            level: options.write,
            region: servedBy(r, options),
            ...contextSent(options),
            ...durabilityAsked(options),
            reply: r && writeReply(r),
          }),
        ),
      delete: (key, options) =>
        this.#record(
          () => db.delete(key, options),
          (r) => ({
            client,
            op: 'delete',
            key,
            level: options.write,
            region: servedBy(r, options),
            ...contextSent(options),
            ...durabilityAsked(options),
            reply: r && writeReply(r),
          }),
        ),
    }
  }

  /** The history recorded so far, with `final` (and `finalSiblings`) if given. */
  history(final?: FinalState, finalSiblings?: FinalSiblings): History {
    const history: History = { operations: [...this.#operations] }
    if (final !== undefined) history.final = final
    if (finalSiblings !== undefined) history.finalSiblings = finalSiblings
    return history
  }

  async #record<R>(
    call: () => Promise<R>,
    describe: (reply: R | undefined) => CallFields,
  ): Promise<R> {
    const invokedAt = this.#now()
    try {
      const reply = await call()
      this.#operations.push({
        ...describe(reply),
        invokedAt,
        completedAt: this.#now(),
        ok: true,
      } as Operation)
      return reply
    } catch (error) {
      const { reply: _none, ...rest } = describe(undefined)
      this.#operations.push({
        ...rest,
        invokedAt,
        completedAt: this.#now(),
        ok: false,
        error: errorOf(error),
      } as Operation)
      throw error
    }
  }
}

function servedBy(
  reply: { region?: number } | undefined,
  options: KvReadOptions | KvWriteOptions,
): number {
  // The SDK may fall back to another region; the history names the one that answered.
  return typeof reply?.region === 'number' ? reply.region : options.region
}

function readReply(r: KvReadResult): ReadReplyRecord {
  const reply: ReadReplyRecord = { found: r.found }
  if (r.found) reply.value = r.value
  if (r.ts !== undefined) reply.ts = r.ts
  if (r.dc !== undefined) reply.dc = r.dc
  if (r.versions !== undefined)
    reply.siblings = r.versions.map((s) => {
      const sibling: SiblingRecord = { ts: s.ts, dc: s.dc, deleted: s.deleted }
      if (!s.deleted) sibling.value = s.value
      return sibling
    })
  if (r.context !== undefined) reply.context = r.context
  return reply
}

function writeReply(r: KvWriteResult): WriteReplyRecord {
  const reply: WriteReplyRecord = { ts: r.ts, dc: r.dc, idx: r.idx }
  if (r.context !== undefined) reply.context = r.context
  return reply
}

function durabilityAsked(options: KvWriteOptions): Pick<CallFields, 'durability'> {
  return options.durability === undefined ? {} : { durability: options.durability }
}

function contextSent(options: KvWriteOptions): { context?: string } {
  return typeof options.context === 'string' ? { context: options.context } : {}
}

function errorOf(error: unknown): OperationError {
  const e = error as { code?: unknown; name?: unknown; message?: unknown } | null | undefined
  const code =
    typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'UNKNOWN'
  return typeof e?.message === 'string' ? { code, message: e.message } : { code }
}
