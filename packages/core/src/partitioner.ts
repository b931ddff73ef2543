/**
 * Key → partition mapping, shared by the SDK and the gateway so both agree on where a key lives.
 * `p = fnv1a32(utf8(k)) mod P`; a key with a `{tag}` hashes only the tag (as Redis Cluster does),
 * so keys that share a tag share a partition.
 */

const encoder = new TextEncoder()

/** 32-bit FNV-1a over bytes, as an unsigned integer. */
export function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * The part of a key that is hashed: the text between the first `{` and the first `}` after it,
 * when that text is not empty; otherwise the whole key.
 */
export function hashTag(key: string): string {
  const open = key.indexOf('{')
  if (open === -1) return key
  const close = key.indexOf('}', open + 1)
  if (close === -1 || close === open + 1) return key
  return key.slice(open + 1, close)
}

/** The partition (0..partitions-1) that holds `key`. */
export function partitionOf(key: string, partitions: number): number {
  return fnv1a32(encoder.encode(hashTag(key))) % partitions
}
