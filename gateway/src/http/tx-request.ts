/**
 * Turns the bodies of `POST /v1/tx/read` and `POST /v1/tx/commit` into validated requests of the
 * transaction service: what the route schemas cannot say (key lengths, the limits of the cluster,
 * the read set, the vectors, the operation id, the API key's scope) is checked here, before the
 * service is called, so a bad transaction is refused whole and nothing of it is written.
 */
import { opTenantOf } from './op-request.js'
import { createHash } from 'node:crypto'
import {
  CausewayError,
  HEADER_DT,
  HLC_ZERO,
  type ReadNeed,
  type TxCommitBody,
  type TxReadBody,
  type TxWrite,
  checkKey,
  checkReadSet,
  encodeCommitWrites,
  isHlc,
  parseOpId,
  parseReadNeed,
  sortWrites,
} from '@causeway/core'
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { ClusterShape, WriteOp } from '../cluster/cluster-service.js'
import type { TxCommitRequest, TxReadRequest } from '../cluster/transactions/transaction-service.js'
import { checkRequestWrites } from './auth.js'
import { checkDataScope } from './data-scope.js'
import { encodeValue } from './kv-request.js'

function timeoutOf(timeoutMs: number | undefined, shape: ClusterShape): number {
  return timeoutMs ?? shape.limits.defaultTimeoutMs
}

function tooMany(count: number, shape: ClusterShape): CausewayError {
  return new CausewayError(
    'TOO_MANY_KEYS',
    `the transaction names ${count} keys; the limit is ${shape.limits.maxTxKeys}`,
    { keys: count, limit: shape.limits.maxTxKeys },
  )
}

/** A transactional read, checked. */
export function parseTxRead(
  request: FastifyRequest,
  body: TxReadBody,
  timeoutMs: number | undefined,
  shape: ClusterShape,
): TxReadRequest {
  if (body.keys.length > shape.limits.maxTxKeys) throw tooMany(body.keys.length, shape)
  for (const key of body.keys) {
    checkKey(key, shape.limits.maxKeyBytes)
    checkDataScope(request, key, 'read')
  }
  const read: TxReadRequest = { keys: body.keys, timeoutMs: timeoutOf(timeoutMs, shape) }
  if (body.snapshot !== undefined) read.snapshot = body.snapshot
  if (body.minTid !== undefined) read.minTid = body.minTid
  if (body.after !== undefined) {
    const after = new Map<number, ReadNeed>()
    for (const [p, text] of Object.entries(body.after)) {
      const partition = Number(p)
      if (partition >= shape.partitions)
        throw new CausewayError('INVALID_VECTOR', `partition ${p} does not exist`, { partition })
      after.set(partition, parseReadNeed(text, shape.regionNames.length))
    }
    read.after = after
  }
  return read
}

/** What a commit is made of, as its fingerprint hashes it (the writes as the log will hold them). */
function fingerprintOf(snapshot: number, reads: unknown, writes: readonly TxWrite[]): string {
  return createHash('sha256')
    .update(`commit\n${snapshot}\n${JSON.stringify(reads)}\n`)
    .update(encodeCommitWrites(writes))
    .digest('base64url')
}

/** A commit, checked. */
export function parseTxCommit(
  request: FastifyRequest,
  body: TxCommitBody,
  query: { durability?: 'leader' | 'majority'; timeoutMs?: number },
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
): TxCommitRequest {
  // A commit appends to the region's log, even one that only read: it needs write access.
  checkRequestWrites(request)
  const reads = checkReadSet(body.reads, body.snapshot)
  const keys = new Set<string>()
  for (const [key] of reads) {
    checkKey(key, shape.limits.maxKeyBytes)
    checkDataScope(request, key, 'read')
    keys.add(key)
  }
  let bytes = 0
  const writes: TxWrite[] = []
  const written = new Set<string>()
  for (const write of body.writes) {
    checkKey(write.key, shape.limits.maxKeyBytes)
    checkDataScope(request, write.key, 'write')
    if (written.has(write.key))
      throw new CausewayError('INVALID_REQUEST', `${JSON.stringify(write.key)} is written twice`, {
        key: write.key,
      })
    written.add(write.key)
    keys.add(write.key)
    if (!('value' in write)) {
      writes.push([write.key, undefined])
      continue
    }
    const { json } = encodeValue(write.value)
    const size = Buffer.byteLength(json)
    if (size > shape.limits.maxValueBytes)
      throw new CausewayError(
        'VALUE_TOO_LARGE',
        `the value of ${JSON.stringify(write.key)} is ${size} bytes of JSON; the limit is ${shape.limits.maxValueBytes}`,
        { key: write.key, bytes: size, limit: shape.limits.maxValueBytes },
      )
    bytes += size
    writes.push([write.key, json])
  }
  if (keys.size > shape.limits.maxTxKeys) throw tooMany(keys.size, shape)
  if (bytes > shape.limits.maxTxBytes)
    throw new CausewayError(
      'TRANSACTION_TOO_LARGE',
      `the transaction writes ${bytes} bytes of JSON; the limit is ${shape.limits.maxTxBytes}`,
      { bytes, limit: shape.limits.maxTxBytes },
    )
  const dtHeader = headers[HEADER_DT]
  let dt = HLC_ZERO
  if (dtHeader !== undefined) {
    if (typeof dtHeader !== 'string' || !isHlc(dtHeader))
      throw new CausewayError('INVALID_HLC', `${HEADER_DT} must be an HLC: 16 lowercase hex digits`)
    dt = dtHeader
  }
  const sorted = sortWrites(writes)
  const commit: TxCommitRequest = {
    snapshot: body.snapshot,
    reads,
    writes: sorted,
    dt,
    durability: query.durability ?? 'leader',
    timeoutMs: timeoutOf(query.timeoutMs, shape),
  }
  if (body.id !== undefined) {
    parseOpId(body.id)
    const op: WriteOp = { id: body.id, fingerprint: fingerprintOf(body.snapshot, reads, sorted) }
    const tenant = opTenantOf(request)
    if (tenant !== '') op.tenant = tenant
    commit.op = op
  }
  return commit
}

/** The body a route for transactions takes: its writes, keys and some room. */
export function txBodyLimit(shape: ClusterShape): number {
  const { maxTxBytes, maxTxKeys, maxKeyBytes } = shape.limits
  return 2 * maxTxBytes + maxTxKeys * (6 * maxKeyBytes + 64) + 4096
}
