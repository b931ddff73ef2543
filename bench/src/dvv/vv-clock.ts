/**
 * The baseline of the `dvv` suite (bench only): version vectors with one entry per **client**, as
 * Riak used them before DVV (`X-Riak-ClientId`), one clock per object for all its values, pruned
 * the way Riak prunes them. A write's clock is its context with the writer's entry advanced (the
 * client keeps a counter that only grows); it replaces the object when that clock descends the
 * stored one, and is kept beside the stored values, clocks merged, otherwise.
 *
 * Pruning (riak_core `vclock:prune/3` with the bucket defaults `small_vclock` 20, `big_vclock`
 * 50, `young_vclock` 20 s, `old_vclock` 1 day): entries are ordered by their timestamp; while a
 * clock has more than `small` entries and its oldest entry is older than `young`, that entry is
 * dropped if the clock has more than `big` entries or the entry is older than `old`. So clocks
 * keep 20 to 50 entries depending on how fresh they are. Dropping entries makes a clock look
 * older than it is: a later write may then fail to dominate siblings it had seen (a false
 * conflict), which is the cost DVV avoids.
 */

/** One entry: a client id, its counter, and when it was last advanced (ms). */
export type VvEntry = readonly [client: number, counter: number, at: number]

/** A version vector: entries sorted by client id. */
export type Vv = readonly VvEntry[]

/** Riak's pruning parameters. */
export interface PruneOptions {
  /** Never prune a clock with at most this many entries. @default 20 */
  small: number
  /** Always prune (old enough entries) beyond this many. @default 50 */
  big: number
  /** Never prune entries younger than this, ms. @default 20_000 */
  youngMs: number
  /** Prune entries older than this down to `small`, ms. @default 86_400_000 */
  oldMs: number
}

/** Riak's defaults. */
export const RIAK_PRUNING: Readonly<PruneOptions> = Object.freeze({
  small: 20,
  big: 50,
  youngMs: 20_000,
  oldMs: 86_400_000,
})

/** `a ≤ b`: every entry of `a` is in `b` with a counter at least as high. */
export function descends(b: Vv, a: Vv): boolean {
  let j = 0
  for (const [client, counter] of a) {
    while (j < b.length && b[j]![0] < client) j++
    const e = b[j]
    if (e === undefined || e[0] !== client || e[1] < counter) return false
  }
  return true
}

/** The pointwise maximum of two clocks (the later timestamp of each entry). */
export function mergeVv(a: Vv, b: Vv): Vv {
  const out: VvEntry[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const x = a[i]
    const y = b[j]
    if (y === undefined || (x !== undefined && x[0] < y[0])) {
      out.push(x!)
      i++
    } else if (x === undefined || y[0] < x[0]) {
      out.push(y)
      j++
    } else {
      out.push([x[0], Math.max(x[1], y[1]), Math.max(x[2], y[2])])
      i++
      j++
    }
  }
  return out
}

/** `context` with `client`'s entry set to `counter` (which the client keeps increasing), at `now`. */
export function advance(context: Vv, client: number, counter: number, now: number): Vv {
  const out = context.filter((e) => e[0] !== client)
  out.push([client, counter, now])
  return out.sort((a, b) => a[0] - b[0])
}

/** Riak's `vclock:prune` (see the module comment). */
export function prune(clock: Vv, now: number, options: PruneOptions = RIAK_PRUNING): Vv {
  if (clock.length <= options.small) return clock
  const byAge = [...clock].sort((a, b) => a[2] - b[2] || a[0] - b[0])
  let from = 0
  while (byAge.length - from > options.small) {
    const age = now - byAge[from]![2]
    if (age < options.youngMs) break
    if (byAge.length - from > options.big || age > options.oldMs) from++
    else break
  }
  if (from === 0) return clock
  return byAge.slice(from).sort((a, b) => a[0] - b[0])
}

/**
 * A Riak object: its values (siblings, JSON texts) and one clock for all of them, as Riak keeps
 * them. A read returns the values and the clock (the context).
 */
export interface VvObject {
  values: readonly string[]
  clock: Vv
}

/** An object no write has touched. */
export const EMPTY_OBJECT: VvObject = Object.freeze({ values: [], clock: [] })

/**
 * Riak's merge of two versions of an object (`riak_object:reconcile`): the one whose clock
 * descends the other wins whole; otherwise both sets of values are kept and the clocks merge.
 * Merged clocks cannot tell any value's own history apart any more, so a later write that saw a
 * value but not its siblings supersedes none of them: a false conflict.
 */
export function mergeObjects(local: VvObject, incoming: VvObject): VvObject {
  if (descends(incoming.clock, local.clock)) return incoming
  if (descends(local.clock, incoming.clock)) return local
  const values = [...local.values]
  for (const v of incoming.values) if (!values.includes(v)) values.push(v)
  return { values, clock: mergeVv(local.clock, incoming.clock) }
}

/**
 * A write coordinated by a replica (Riak's put path): the new value's clock is the writer's
 * context advanced at the client, merged with the stored object, and the stored clock is pruned.
 */
export function writeObject(
  local: VvObject,
  value: string,
  context: Vv,
  client: number,
  counter: number,
  now: number,
  options: PruneOptions = RIAK_PRUNING,
): VvObject {
  const written = { values: [value], clock: advance(context, client, counter, now) }
  const merged = mergeObjects(local, written)
  return { values: merged.values, clock: prune(merged.clock, now, options) }
}

/**
 * The wire form of a clock, for its size: per entry the client id, the counter and the timestamp
 * in seconds (Riak keeps it for pruning), as unsigned LEB128 varints after an entry count; the
 * same varints as Causeway's causal context.
 */
export function encodeVv(clock: Vv): Uint8Array {
  const bytes: number[] = []
  const varint = (n: number): void => {
    let v = Math.max(0, Math.floor(n))
    while (v >= 128) {
      bytes.push((v % 128) | 128)
      v = Math.floor(v / 128)
    }
    bytes.push(v)
  }
  varint(clock.length)
  for (const [client, counter, at] of clock) {
    varint(client)
    varint(counter)
    varint(at / 1000)
  }
  return Uint8Array.from(bytes)
}

/** Inverse of {@link encodeVv} (timestamps come back in whole seconds, as ms). */
export function decodeVv(bytes: Uint8Array): Vv {
  let at = 0
  const varint = (): number => {
    let value = 0
    let scale = 1
    for (;;) {
      const b = bytes[at++]
      if (b === undefined) throw new Error('truncated clock')
      value += (b & 127) * scale
      if (b < 128) return value
      scale *= 128
    }
  }
  const count = varint()
  const out: VvEntry[] = []
  for (let k = 0; k < count; k++) out.push([varint(), varint(), varint() * 1000])
  return out
}
