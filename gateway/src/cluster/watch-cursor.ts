/**
 * Change-feed cursors (`GET /v1/watch`, `since` / `Last-Event-ID`): per watched partition, its
 * epoch and, per origin region, the highest origin idx the stream has delivered through. An
 * origin's entries carry the same idx on every replica of every region, and each origin's entries
 * are applied in idx order, so a stream resumed from a cursor on any replica delivers exactly the
 * changes after it.
 *
 * Opaque to clients: base64url of a versioned binary form, `[version, cluster tag (4 bytes),
 * regions, partitions, count, then per partition: p, epoch, regions × idx]`, numbers as unsigned
 * LEB128 varints. The tag (from the cluster id) and the shape make a cursor of another cluster, or
 * of another shape of this one, `INVALID_CURSOR`.
 */
import { createHash } from 'node:crypto'
import { CausewayError } from '@causeway/core'

/** Version of the cursor encoding. */
export const CURSOR_VERSION = 1
/** Longest cursor accepted, in characters. */
export const MAX_CURSOR_LENGTH = 1 << 20

/** What a cursor holds for one partition. */
export interface PartitionPosition {
  epoch: number
  /** `idx[d]`: the highest origin idx of region `d` delivered. */
  idx: number[]
}

/** The shape a cursor belongs to. */
export interface CursorShape {
  cluster: string
  regions: number
  partitions: number
}

/** Positions by partition. */
export type WatchPositions = ReadonlyMap<number, PartitionPosition>

function tagOf(cluster: string): Buffer {
  return createHash('sha256').update(cluster).digest().subarray(0, 4)
}

function pushVarint(out: number[], n: number): void {
  // Safe integers only: 7 bits at a time, without 32-bit bitwise operators.
  let v = n
  while (v >= 0x80) {
    out.push((v % 0x80) + 0x80)
    v = Math.floor(v / 0x80)
  }
  out.push(v)
}

/** Encodes `positions` (partitions in ascending order) for `shape`. */
export function encodeCursor(shape: CursorShape, positions: WatchPositions): string {
  const out: number[] = [CURSOR_VERSION, ...tagOf(shape.cluster)]
  pushVarint(out, shape.regions)
  pushVarint(out, shape.partitions)
  const partitions = [...positions.keys()].sort((a, b) => a - b)
  pushVarint(out, partitions.length)
  for (const p of partitions) {
    const { epoch, idx } = positions.get(p)!
    pushVarint(out, p)
    pushVarint(out, epoch)
    for (let d = 0; d < shape.regions; d++) pushVarint(out, idx[d] ?? 0)
  }
  return Buffer.from(out).toString('base64url')
}

function invalid(why: string): CausewayError {
  return new CausewayError('INVALID_CURSOR', `invalid change-feed cursor: ${why}`)
}

/**
 * Decodes a cursor of `shape`.
 * @throws `INVALID_CURSOR` for anything that is not one, or one of another cluster or shape.
 */
export function decodeCursor(text: string, shape: CursorShape): Map<number, PartitionPosition> {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_CURSOR_LENGTH)
    throw invalid('empty or too long')
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw invalid('not base64url')
  const bytes = Buffer.from(text, 'base64url')
  let at = 0
  const varint = (): number => {
    let value = 0
    let scale = 1
    for (let i = 0; i < 8; i++) {
      if (at >= bytes.length) throw invalid('truncated')
      const byte = bytes[at++]!
      value += (byte & 0x7f) * scale
      if (byte < 0x80) {
        if (!Number.isSafeInteger(value)) throw invalid('a number is too large')
        return value
      }
      scale *= 0x80
    }
    throw invalid('a number is too long')
  }
  if (bytes[at++] !== CURSOR_VERSION) throw invalid(`not a version ${CURSOR_VERSION} cursor`)
  if (bytes.length < 5 || !bytes.subarray(1, 5).equals(tagOf(shape.cluster)))
    throw invalid('it belongs to another cluster')
  at = 5
  const regions = varint()
  const partitions = varint()
  if (regions !== shape.regions || partitions !== shape.partitions)
    throw invalid(
      `it is for ${regions} regions × ${partitions} partitions, the cluster has ${shape.regions} × ${shape.partitions}`,
    )
  const count = varint()
  if (count > partitions) throw invalid('more partitions than the cluster has')
  const positions = new Map<number, PartitionPosition>()
  let last = -1
  for (let i = 0; i < count; i++) {
    const p = varint()
    if (p >= partitions || p <= last) throw invalid('partitions out of range or order')
    last = p
    const epoch = varint()
    if (epoch < 1) throw invalid('an epoch below 1')
    const idx: number[] = []
    for (let d = 0; d < regions; d++) idx.push(varint())
    positions.set(p, { epoch, idx })
  }
  if (at !== bytes.length) throw invalid('trailing bytes')
  return positions
}
