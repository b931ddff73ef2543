/**
 * Reading another region's copy of a log over HTTP, for a new partition leader's recovery: the
 * entries of its own region that the old leader had shipped before it was lost are in the other
 * regions (which keep their origin's indexes), and the new leader takes them back before its
 * first write, so nothing shipped is lost and no region holds what the origin does not
 * (`docs/failover.md`). The routes are the internal ones, with the cluster secret:
 * `GET /v1/internal/ship/:partition/:origin` (that region's `sv[origin]`) and
 * `GET /v1/internal/log/:partition/:origin?after=&limit=` (its entries of `origin` after `after`).
 */
import { type LogEntry, checkLogEntry } from '@causeway/core'
import { shippingPath } from './http-shipping-link.js'
import type { ShippingFetch } from './keep-alive-fetch.js'

/** The path of the internal log route of `partition`, entries of `origin`. */
export function regionLogPath(partition: number, origin: number): string {
  return `/v1/internal/log/${partition}/${origin}`
}

/** A region to recover from: its id and its gateways' base URLs. */
export interface RecoverySource {
  id: number
  gateways: readonly string[]
}

/** Options of {@link recoverFromRegions}. */
export interface RecoveryOptions {
  /** The other regions of the cluster. */
  sources: readonly RecoverySource[]
  regions: number
  partition: number
  /** The recovering leader's region: whose entries are fetched. */
  origin: number
  /** The last index of `origin` the new leader holds. */
  after: number
  secret: string
  /** When to give up on regions that did not answer (epoch ms). */
  deadline: number
  /** Applies a page of entries, in order, at the new leader. */
  apply: (entries: readonly LogEntry[]) => Promise<void>
  /** Entries per request. @default 500 */
  pageSize?: number
  /** The links' HTTP client. @default globalThis.fetch */
  fetch?: ShippingFetch
}

/** What a recovery did. */
export interface RecoveryOutcome {
  /** Entries taken back. */
  recovered: number
  /** The region they came from (the one holding the most). */
  from?: number
  /** Regions that did not answer before the deadline: they may hold more. */
  unanswered: number[]
}

/**
 * Asks every other region how far it holds `origin`'s entries, then takes the entries past
 * `after` from the one holding the most (FIFO shipping makes every region's copy a prefix of the
 * origin's log, so the longest holds the others), page by page, applying each.
 */
export async function recoverFromRegions(options: RecoveryOptions): Promise<RecoveryOutcome> {
  const { partition, origin, secret, deadline } = options
  const get: ShippingFetch = options.fetch ?? globalThis.fetch
  const unanswered: number[] = []
  const held = await Promise.all(
    options.sources.map(async (source) => {
      for (const gateway of source.gateways) {
        try {
          const body = (await request(
            get,
            gateway + shippingPath(partition, origin),
            secret,
            deadline,
          )) as {
            checkpoint?: unknown
          }
          if (typeof body.checkpoint === 'number')
            return { source, gateway, checkpoint: body.checkpoint }
        } catch {
          // the region's next gateway
        }
      }
      unanswered.push(source.id)
      return undefined
    }),
  )
  let best: { source: RecoverySource; gateway: string; checkpoint: number } | undefined
  for (const h of held) if (h && (best === undefined || h.checkpoint > best.checkpoint)) best = h
  if (best === undefined || best.checkpoint <= options.after) return { recovered: 0, unanswered }
  let after = options.after
  let recovered = 0
  const limit = options.pageSize ?? 500
  while (after < best.checkpoint) {
    const url = `${best.gateway}${regionLogPath(partition, origin)}?after=${after}&limit=${limit}`
    const body = (await request(get, url, secret, deadline)) as { entries?: unknown }
    if (!Array.isArray(body.entries) || body.entries.length === 0) break
    const entries = body.entries.map((raw: unknown) =>
      checkLogEntry({ ...(raw as object), origin }, options.regions),
    )
    // Only what follows on from what the leader holds, in order.
    const run: LogEntry[] = []
    for (const e of entries) {
      if (e.idx !== after + run.length + 1) break
      run.push(e)
    }
    if (run.length === 0) break
    await options.apply(run)
    recovered += run.length
    after = run.at(-1)!.idx
  }
  return { recovered, from: best.source.id, unanswered }
}

async function request(
  get: ShippingFetch,
  url: string,
  secret: string,
  deadline: number,
): Promise<unknown> {
  const ms = Math.max(1, deadline - Date.now())
  const res = await get(url, {
    method: 'GET',
    headers: { authorization: `Bearer ${secret}` },
    body: null,
    signal: AbortSignal.timeout(ms),
  })
  const body: unknown = await res.json().catch(() => undefined)
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`)
  return body
}
