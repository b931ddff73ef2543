/**
 * How the session is kept in the local store. An applied write must be in the stored session by
 * the time it leaves the outbox (its removal and its session state are one batch), so a write
 * saves its partition's row (`hrm[:,p]`, `hwm[:,p]`, their positions' epochs) and the dependency times, a few
 * dozen bytes, not the whole session: a session that touched 1,000 partitions is 40 kB of JSON,
 * and writing it with every write cost more than the write. The whole session is saved besides,
 * at most every 50 ms while it changes (reads change it too) and on close; that save drops the
 * rows written before it, which it holds.
 *
 * `meta` keys: `session` (the whole session, `SessionJSON`), `session-head` (the fields of a
 * `SessionJSON` but `p`), `session-p:<partition>` (one row of `p`). Loading joins them
 * (position by position, the higher index with its epoch: `Session.merge`), so a row saved after the whole
 * session, or without one, is not lost.
 */
import { SESSION_FORMAT_VERSION, Session, type SessionJSON } from '@causeway/core'
import type { StoreChange } from './local-store.js'

/** The prefix of the row keys in `meta`. */
export const SESSION_ROW_PREFIX = 'session-p:'

/** The session as stored: the whole (or undefined), the head and the rows saved since. */
export interface StoredSessionParts {
  whole: unknown
  head: unknown
  rows: [string, unknown][]
}

/**
 * The stored session as one `SessionJSON`: the whole joined with the rows saved after it. Rows
 * that do not form a valid session with their head are left out (the whole, as it was); a whole
 * that is not valid is left to the caller, which refuses it as it always did.
 */
export function joinStoredSession({ whole, head, rows }: StoredSessionParts): unknown {
  if (rows.length === 0 || typeof head !== 'object' || head === null) return whole
  const p: Record<string, unknown> = {}
  for (const [key, row] of rows) p[key.slice(SESSION_ROW_PREFIX.length)] = row
  let saved: Session
  try {
    saved = Session.fromJSON({ ...head, p })
  } catch {
    return whole
  }
  if (whole === undefined) return saved.toJSON()
  try {
    return Session.fromJSON(whole).merge(saved).toJSON()
  } catch {
    return whole
  }
}

/** What saves the session of one client. */
export class SessionSaver {
  readonly #session: Session
  /** Row keys written since the whole session was last saved (that save deletes them). */
  readonly #rows = new Set<string>()

  constructor(session: Session) {
    this.#session = session
  }

  /** The changes that save what writes to `partitions` changed: their rows and the head. */
  rows(partitions: Iterable<number>): StoreChange[] {
    const s = this.#session
    const head: Omit<SessionJSON, 'p'> = {
      v: SESSION_FORMAT_VERSION,
      cluster: s.cluster,
      regions: s.regions,
      partitions: s.partitions,
      dtR: s.dtR,
      dtW: s.dtW,
    }
    const changes: StoreChange[] = [{ type: 'put', in: 'meta', key: 'session-head', value: head }]
    for (const p of new Set(partitions)) {
      const row = s.row(p)
      if (row === undefined) continue
      const key = SESSION_ROW_PREFIX + p
      this.#rows.add(key)
      changes.push({
        type: 'put',
        in: 'meta',
        key,
        value: { r: [...row.hrm], w: [...row.hwm], re: [...row.hrmEpochs], we: [...row.hwmEpochs] },
      })
    }
    return changes
  }

  /**
   * The changes that save the whole session and delete the rows it now holds, and those rows'
   * keys: give them back with {@link keep} when the save failed.
   */
  whole(): { changes: StoreChange[]; rows: string[] } {
    const rows = [...this.#rows]
    this.#rows.clear()
    const changes: StoreChange[] = [
      { type: 'put', in: 'meta', key: 'session', value: this.#session.toJSON() },
      ...rows.map((key): StoreChange => ({ type: 'del', in: 'meta', key })),
    ]
    return { changes, rows }
  }

  /** Rows whose deletion failed: the next whole save deletes them. */
  keep(rows: readonly string[]): void {
    for (const key of rows) this.#rows.add(key)
  }
}
