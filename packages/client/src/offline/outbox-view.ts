/**
 * The outbox as the app sees it: `db.pending()` (what waits), `db.failed()` (what the gateway
 * refused for good) and `db.discardFailed()`.
 */
import { CausewayError, type ErrorBody } from '@causeway/core'
import type { LocalStore } from './local-store.js'
import type { FailedOp, PendingOp, StoredOp } from './outbox-types.js'

/** A queued op as the app sees it (without what only the replay needs). */
export function publicOp(op: StoredOp): PendingOp {
  const out: PendingOp = {
    opId: op.opId,
    kind: op.kind,
    key: op.key,
    queuedAt: op.queuedAt,
    region: op.region,
  }
  if (op.kind === 'put') out.value = op.value
  if (op.elements !== undefined) out.elements = op.elements
  return out
}

/** The queued ops, oldest first, but those in `removing` (applied, their removal being written). */
export async function pendingOps(
  store: LocalStore,
  removing: ReadonlySet<string>,
): Promise<PendingOp[]> {
  // Taken before the read: a removal that lands during it must still be left out.
  const left = new Set(removing)
  return (await store.outbox()).filter((op) => !left.has(op.opId)).map(publicOp)
}

/** The ops refused for good, with their errors. */
export async function failedOps(store: LocalStore): Promise<FailedOp[]> {
  const rows = await store.entries('failed')
  return rows.map(([, value]) => {
    const v = value as StoredOp & { error: ErrorBody; failedAt: number }
    return { ...publicOp(v), error: CausewayError.fromBody(v.error), failedAt: v.failedAt }
  })
}

/** Forgets failed ops (all, or those named); resolves how many. */
export async function discardFailed(
  store: LocalStore,
  opIds: readonly string[] | undefined,
): Promise<number> {
  const rows = await store.entries('failed')
  const drop = rows.filter(([, v]) => opIds === undefined || opIds.includes((v as StoredOp).opId))
  await store.commit(drop.map(([key]) => ({ type: 'del', in: 'failed', key })))
  return drop.length
}
