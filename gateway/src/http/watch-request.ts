/**
 * Turns a `GET /v1/watch` request into a {@link WatchRequest}: what to watch (`prefix` or
 * `keys`), where to resume (`since`, or `Last-Event-ID`, which wins: a browser's `EventSource`
 * reconnects to the same URL with the id of the last event it got), and what the serving replicas
 * must cover first (`causeway-after`, as for reads).
 *
 * `causeway-after` on a watch: a read vector (`d:idx@epoch,...`) when the watch touches one
 * partition (keys all in one partition), or per partition `p=<vector>` items joined by `;`
 * (`0=1@0:12,1:7;3=1@1:4`) for any watch; partitions not named need nothing.
 */
import {
  CausewayError,
  HEADER_AFTER,
  HEADER_LAST_EVENT_ID,
  checkKey,
  parseReadNeed,
  partitionOf,
  utf8Length,
  type ReadLevel,
  type ReadNeed,
  type WatchQuery,
} from '@causeway/core'
import type { IncomingHttpHeaders } from 'node:http'
import type { WatchFilter, WatchRequest } from '../cluster/change-feed.js'
import type { ClusterShape } from '../cluster/cluster-service.js'
import { checkCausalLevel } from './kv-request.js'

/** Most keys one watch may name. */
export const MAX_WATCH_KEYS = 100

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/**
 * The keys of `keys=`: once the query string is decoded, a comma-separated list of keys each
 * percent-encoded (`encodeURIComponent`, so a `,` in a key is `%2C`), as OpenAPI's form style
 * describes a list: on the wire each key is encoded twice, as the SDK sends it.
 */
function parseKeys(list: string, shape: ClusterShape): string[] {
  const parts = list.split(',')
  if (parts.length > MAX_WATCH_KEYS)
    throw new CausewayError(
      'INVALID_REQUEST',
      `a watch names at most ${MAX_WATCH_KEYS} keys (got ${parts.length}); watch a prefix instead`,
      { limit: MAX_WATCH_KEYS },
    )
  const keys = parts.map((part) => {
    let key: string
    try {
      key = decodeURIComponent(part)
    } catch {
      throw new CausewayError('INVALID_KEY', 'a watched key is not valid percent-encoded UTF-8')
    }
    checkKey(key, shape.limits.maxKeyBytes)
    return key
  })
  return [...new Set(keys)]
}

/** What the serving replica of each watched partition must cover, by partition. */
function parseNeeds(
  text: string | undefined,
  partitions: readonly number[],
  shape: ClusterShape,
): Map<number, ReadNeed> {
  const needs = new Map<number, ReadNeed>()
  if (text === undefined) return needs
  const regions = shape.regionNames.length
  if (!text.includes('=')) {
    if (partitions.length !== 1)
      throw new CausewayError(
        'INVALID_VECTOR',
        `this watch spans ${partitions.length} partitions: give ${HEADER_AFTER} per partition, as p=<vector> items joined by ";"`,
      )
    needs.set(partitions[0]!, parseReadNeed(text, regions))
    return needs
  }
  const watched = new Set(partitions)
  for (const item of text.split(';')) {
    const eq = item.indexOf('=')
    const p = /^\s*(0|[1-9][0-9]{0,5})\s*$/.test(item.slice(0, eq)) ? Number(item.slice(0, eq)) : -1
    if (eq === -1 || p < 0 || p >= shape.partitions || needs.has(p))
      throw new CausewayError(
        'INVALID_VECTOR',
        `invalid ${HEADER_AFTER} item ${JSON.stringify(item.slice(0, 64))}: p=<vector>, each partition once`,
      )
    // A partition the watch does not touch needs nothing of it.
    if (watched.has(p)) needs.set(p, parseReadNeed(item.slice(eq + 1), regions))
  }
  return needs
}

/** The options of a watch the route itself decides. */
export interface WatchDefaults {
  heartbeatMs: number
}

/** A validated watch request, and the level it was made at. */
export interface ParsedWatch {
  request: WatchRequest
  level: ReadLevel
  /** Each watched key, or the prefix: what the API key's scope is checked against. */
  scope: string[]
}

/** Parses a watch request (the query as the route schema validated it). */
export function parseWatch(
  query: WatchQuery,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
  defaults: WatchDefaults,
): ParsedWatch {
  if ((query.prefix === undefined) === (query.keys === undefined))
    throw new CausewayError('INVALID_REQUEST', 'a watch needs either prefix or keys, not both')
  let filter: WatchFilter
  let partitions: number[]
  if (query.prefix !== undefined) {
    const bytes = utf8Length(query.prefix)
    if (bytes > shape.limits.maxKeyBytes || !query.prefix.isWellFormed())
      throw new CausewayError(
        bytes > shape.limits.maxKeyBytes ? 'KEY_TOO_LARGE' : 'INVALID_KEY',
        'the prefix must be valid Unicode no longer than a key',
      )
    filter = { prefix: query.prefix }
    partitions = Array.from({ length: shape.partitions }, (_, p) => p)
  } else {
    const keys = parseKeys(query.keys!, shape)
    filter = { keys }
    partitions = [...new Set(keys.map((k) => partitionOf(k, shape.partitions)))].sort(
      (a, b) => a - b,
    )
  }
  const level = query.level ?? 'session'
  checkCausalLevel(level, shape, { route: 'change feeds' })
  const timeoutMs = query.timeoutMs ?? shape.limits.defaultTimeoutMs
  if (timeoutMs > shape.limits.maxTimeoutMs)
    throw new CausewayError(
      'INVALID_OPTION',
      `timeoutMs ${timeoutMs} is above the limit of ${shape.limits.maxTimeoutMs}`,
      { option: 'timeoutMs', limit: shape.limits.maxTimeoutMs },
    )
  // Validated whatever the level, as a read's vector is; only non-eventual watches wait for it.
  const needs = parseNeeds(header(headers, HEADER_AFTER), partitions, shape)
  const request: WatchRequest = {
    filter,
    partitions,
    needs: level === 'eventual' ? new Map() : needs,
    timeoutMs,
    heartbeatMs: query.heartbeatMs ?? defaults.heartbeatMs,
  }
  const since = header(headers, HEADER_LAST_EVENT_ID) ?? query.since
  if (since !== undefined && since !== '') request.since = since.trim()
  return { request, level, scope: 'prefix' in filter ? [filter.prefix] : [...filter.keys] }
}
