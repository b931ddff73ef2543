/**
 * What the SDK learns from `GET /v1/topology`, checked before use, and how a call's `region`
 * option (a name or an id) becomes a gateway URL.
 */
import { CausewayError, type SessionScope, type Topology, checkNamespaces } from '@causeway/core'
import { PROTOCOL_VERSION } from '@causeway/core'
import { invalidReply, isReplyIndex } from './reply-guard.js'

/** One region as the client routes to it. */
export interface RegionRoute {
  id: number
  name: string
  /** Base URL of this region's gateway, without a trailing slash. */
  url: string
}

/** A region named by the caller: its name (`'eu'`) or its id (`1`). */
export type RegionRef = string | number

function malformed(why: string): CausewayError {
  return new CausewayError('INTERNAL', `the gateway's topology is malformed: ${why}`)
}

function isInt(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min
}

/** Checks a topology reply field by field; the SDK relies on every one of them. */
export function checkTopology(body: unknown): Topology {
  if (typeof body !== 'object' || body === null) throw malformed('not an object')
  const t = body as Record<string, unknown>
  if (typeof t.cluster !== 'string' || t.cluster === '') throw malformed('no cluster id')
  if (t.protocol !== PROTOCOL_VERSION) {
    throw new CausewayError(
      'INTERNAL',
      `the gateway speaks protocol ${JSON.stringify(t.protocol)}; this SDK speaks ${PROTOCOL_VERSION}`,
    )
  }
  if (!Array.isArray(t.regions) || t.regions.length === 0) throw malformed('no regions')
  t.regions.forEach((r: unknown, i) => {
    const region = r as Record<string, unknown> | null
    if (
      !region ||
      region.id !== i ||
      typeof region.name !== 'string' ||
      typeof region.url !== 'string'
    ) {
      throw malformed(`region ${i} must be { id: ${i}, name, url }`)
    }
  })
  if (!isInt(t.region, 0) || t.region >= t.regions.length) throw malformed('bad region id')
  if (!isInt(t.partitions, 1)) throw malformed('bad partition count')
  if (!isInt(t.replicas, 1)) throw malformed('bad replica count')
  if (!Array.isArray(t.epochs) || t.epochs.length !== t.partitions) throw malformed('bad epochs')
  if (!t.epochs.every((e) => isReplyIndex(e, 1)))
    throw invalidReply('topology', 'an epoch is not an integer in 1..2^53 - 2')
  const l = t.limits as Record<string, unknown> | null
  if (
    !l ||
    !isInt(l.maxKeyBytes, 1) ||
    !isInt(l.maxValueBytes, 1) ||
    !isInt(l.defaultTimeoutMs, 0) ||
    !isInt(l.maxTimeoutMs, 0)
  ) {
    throw malformed('bad limits')
  }
  try {
    // Optional: a gateway that predates namespaces publishes none (every key last-writer-wins).
    checkNamespaces(t.namespaces)
  } catch (error) {
    throw malformed(`bad namespaces (${(error as Error).message})`)
  }
  return body as Topology
}

/** The session scope a topology implies: sessions are bound to a cluster and its shape. */
export function scopeOf(topology: Topology): SessionScope {
  return {
    cluster: topology.cluster,
    regions: topology.regions.length,
    partitions: topology.partitions,
  }
}

/** Drops trailing slashes so paths can be appended. */
export function baseUrl(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * The routes to every region. Region URLs in the topology may be relative to the gateway the
 * client connected to; the connected gateway keeps the URL the caller gave (it may sit behind a
 * proxy whose address the gateway does not know).
 */
export function regionRoutes(topology: Topology, connectedUrl: string): RegionRoute[] {
  return topology.regions.map((r) => ({
    id: r.id,
    name: r.name,
    url: r.id === topology.region ? baseUrl(connectedUrl) : regionUrl(r.url, connectedUrl),
  }))
}

// A region's URL, resolved against the connected gateway's: http(s) only, since the SDK sends
// requests (and, to trusted origins, credentials) there; a `javascript:` or `data:` URL from a
// forged topology is refused (`INVALID_REPLY`).
function regionUrl(url: string, connectedUrl: string): string {
  let resolved: URL | undefined
  try {
    resolved = new URL(url, connectedUrl)
  } catch {
    resolved = undefined
  }
  if (resolved?.protocol !== 'http:' && resolved?.protocol !== 'https:')
    throw invalidReply('topology', `region URL ${JSON.stringify(url)} is not an http(s) URL`)
  return baseUrl(resolved.href)
}

/** Finds a region by name or id; throws `UNKNOWN_REGION` otherwise. */
export function findRegion(routes: readonly RegionRoute[], ref: RegionRef): RegionRoute {
  if (typeof ref === 'number') {
    const r = Number.isInteger(ref) ? routes[ref] : undefined
    if (r) return r
  } else if (typeof ref === 'string') {
    for (const r of routes) if (r.name === ref) return r
  }
  throw new CausewayError(
    'UNKNOWN_REGION',
    `unknown region ${JSON.stringify(ref)}; this cluster has ${routes.map((r) => `${r.id} (${r.name})`).join(', ')}`,
  )
}
