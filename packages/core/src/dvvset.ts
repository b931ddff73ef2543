/**
 * Dotted version vector sets (DVVSet): the siblings of one key and their causal history in a
 * clock with one entry per actor. In Causeway the actors are region ids, so a clock never has
 * more than D entries however many clients write.
 *
 * The semantics are those of the reference `dvvset` module (ricardobcl/Dotted-Version-Vectors,
 * as used by Riak), ported to plain immutable data: every function takes sets and returns a new
 * set, never mutating its arguments (results may share unchanged arrays with them, so treat both
 * as read-only). Use the functions through the {@link DvvSet} object: `DvvSet.update(...)`.
 *
 * A set holds, per actor, a counter `n` and the values that actor wrote and nobody has
 * superseded yet, newest first: the value at position `i` carries the dot `(actor, n - i)`, and
 * every dot of that actor up to `n` is in the set's causal history. Values with no dot (the
 * "anonymous" list) come from `DvvSet.new`, `reconcile` and `lww`; they can only be superseded by
 * a set whose history strictly dominates.
 * @packageDocumentation
 */
import { CausewayError } from './errors.js'

/** An actor id. Causeway uses region ids (numbers); strings are accepted too (and used in tests). */
export type DvvActor = number | string

/** One actor's entry: its counter and its surviving values, newest first. */
export type DvvEntry<V, A extends DvvActor = number> = readonly [
  actor: A,
  counter: number,
  values: readonly V[],
]

/** A DVV set: entries sorted by actor ({@link compareDvvActors}) and the anonymous values. */
export interface DvvSet<V, A extends DvvActor = number> {
  /** One entry per actor, strictly ascending by {@link compareDvvActors}. */
  readonly entries: readonly DvvEntry<V, A>[]
  /** Values without a dot, superseded only by a strictly dominating history. */
  readonly anonymous: readonly V[]
}

/**
 * A version vector, `[actor, counter]` pairs sorted by actor: what {@link join} returns and what a
 * reader passes back with its write (the causal context; see `encodeCausalContext`).
 */
export type CausalContext<A extends DvvActor = number> = readonly (readonly [
  actor: A,
  counter: number,
])[]

/**
 * The total order on actors. The reference compares ids in Erlang term order (numbers before
 * atoms, atoms by their text, lists after atoms); we keep the part that matters: numbers first,
 * ascending, then strings by UTF-16 code units (the same as Erlang's order for ASCII names).
 * `less` and `sync` give the same answers under any consistent total order; only the order in
 * which entries are listed depends on it.
 */
export function compareDvvActors(a: DvvActor, b: DvvActor): number {
  if (typeof a === 'number') {
    if (typeof b !== 'number') return -1
    return a < b ? -1 : a > b ? 1 : 0
  }
  if (typeof b === 'number') return 1
  return a < b ? -1 : a > b ? 1 : 0
}

function bug(message: string): CausewayError {
  return new CausewayError('INTERNAL', `DvvSet: ${message}`)
}

function contextEntries<A extends DvvActor>(context: CausalContext<A>): DvvEntry<never, A>[] {
  // The reference re-sorts here (Erlang's lists:sort, by actor then counter) as a defence
  // against serialisations that do not keep order.
  const sorted = context.slice().sort((x, y) => compareDvvActors(x[0], y[0]) || x[1] - y[1])
  return sorted.map(([actor, counter]) => [actor, counter, []] as const)
}

/**
 * A set holding one anonymous value and no history (`new/1`), or, given a causal context, that
 * history with no values of its own (`new/2`): the client side of a write, ready for
 * {@link update}. The context is re-sorted by actor, as in the reference.
 */
function createSet<V>(value: V): DvvSet<V, never>
function createSet<V, A extends DvvActor>(context: CausalContext<A>, value: V): DvvSet<V, A>
function createSet<V, A extends DvvActor>(...args: [V] | [CausalContext<A>, V]): DvvSet<V, A> {
  if (args.length === 1) return { entries: [], anonymous: [args[0]] }
  return { entries: contextEntries(args[0]), anonymous: [args[1]] }
}

/**
 * Like `DvvSet.new` with a list of anonymous values (`new_list`). The reference also
 * wraps a non-list argument; here the type asks for an array, so that case does not arise.
 */
function newList<V>(values: readonly V[]): DvvSet<V, never>
function newList<V, A extends DvvActor>(
  context: CausalContext<A>,
  values: readonly V[],
): DvvSet<V, A>
function newList<V, A extends DvvActor>(
  ...args: [readonly V[]] | [CausalContext<A>, readonly V[]]
): DvvSet<V, A> {
  if (args.length === 1) return { entries: [], anonymous: args[0] }
  return { entries: contextEntries(args[0]), anonymous: args[1] }
}

/** The causal history of a set as a version vector (`join/1`): its actors and counters. */
function join<A extends DvvActor>(set: DvvSet<unknown, A>): CausalContext<A> {
  return set.entries.map(([actor, counter]) => [actor, counter] as const)
}

/**
 * Adds `value` under a new dot of `actor`: the actor's counter goes up by one and the value goes
 * to the head of its list (or a new entry is made, in actor order).
 */
function addEvent<V, A extends DvvActor>(
  entries: readonly DvvEntry<V, A>[],
  actor: A,
  value: V,
): DvvEntry<V, A>[] {
  const out: DvvEntry<V, A>[] = []
  let placed = false
  for (const entry of entries) {
    if (!placed) {
      const order = compareDvvActors(entry[0], actor)
      if (order === 0) {
        out.push([actor, entry[1] + 1, [value, ...entry[2]]])
        placed = true
        continue
      }
      if (order > 0) {
        out.push([actor, 1, [value]])
        placed = true
      }
    }
    out.push(entry)
  }
  if (!placed) out.push([actor, 1, [value]])
  return out
}

function theOneValue<V>(set: DvvSet<V, DvvActor>): V {
  if (set.anonymous.length !== 1) {
    throw bug(
      `update needs a set with exactly one anonymous value (from new), not ${set.anonymous.length}`,
    )
  }
  return set.anonymous[0]!
}

/**
 * A coordinator's write. `update(client, actor)` (`update/2`) turns the one anonymous value of
 * `client` (made by `DvvSet.new`) into a new dot of `actor` on the client's history.
 *
 * `update(client, local, actor)` (`update/3`) first syncs the client's history (without its
 * value) with the coordinator's `local` set, so local values the client had seen are discarded
 * and the others stay as siblings (anonymous values that survive that sync stay too), then adds
 * the value under a new dot of `actor`. The result is newer than both. A write without a context
 * is `update(new(v), local, actor)`; with one, `update(new(context, v), local, actor)`.
 *
 * `actor` must be the coordinator's own id and only one coordinator may use it (a region's
 * leader), or dots would collide.
 * @throws `CausewayError('INTERNAL')` when `client` does not hold exactly one anonymous value (the
 * reference crashes on a failed pattern match there).
 */
function update<V, A extends DvvActor>(client: DvvSet<V, A>, actor: A): DvvSet<V, A>
function update<V, A extends DvvActor>(
  client: DvvSet<V, A>,
  local: DvvSet<V, A>,
  actor: A,
): DvvSet<V, A>
function update<V, A extends DvvActor>(
  client: DvvSet<V, A>,
  localOrActor: DvvSet<V, A> | A,
  actor?: A,
): DvvSet<V, A> {
  const value = theOneValue(client)
  if (typeof localOrActor !== 'object') {
    return { entries: addEvent(client.entries, localOrActor, value), anonymous: [] }
  }
  const synced = syncPair({ entries: client.entries, anonymous: [] }, localOrActor)
  return { entries: addEvent(synced.entries, actor!, value), anonymous: synced.anonymous }
}

/**
 * `a > b` on histories (the reference's `greater`): every actor of `b` is in `a` with a counter
 * at least as high, and `a` is ahead somewhere. As in the reference, an actor present in only one
 * set makes that set ahead even if its counter is 0 (real sets never hold a 0 counter).
 */
function greater(
  a: readonly DvvEntry<unknown, DvvActor>[],
  b: readonly DvvEntry<unknown, DvvActor>[],
): boolean {
  let strict = false
  let i = 0
  let j = 0
  while (j < b.length) {
    if (i === a.length) return false
    const x = a[i]!
    const y = b[j]!
    const order = compareDvvActors(x[0], y[0])
    if (order > 0) return false // `b` has an actor `a` lacks
    if (order < 0) {
      strict = true
      i++
      continue
    }
    if (x[1] < y[1]) return false
    if (x[1] > y[1]) strict = true
    i++
    j++
  }
  return strict || i < a.length
}

/**
 * True when `a`'s causal history is strictly older than `b`'s (`less/2`), so every value of `a`
 * is outdated by `b`. Only the actors and counters are compared; values are ignored.
 */
function less(a: DvvSet<unknown, DvvActor>, b: DvvSet<unknown, DvvActor>): boolean {
  return greater(b.entries, a.entries)
}

/**
 * Merges one actor's entry from two sets. The side with the higher counter (the first on a tie)
 * keeps its counter and those of its values the other side has not already discarded: a value
 * with dot `k` survives when `k` is beyond the other side's counter or the other side still
 * holds it (`k > otherCounter - otherValues.length`).
 */
function mergeEntry<V, A extends DvvActor>(a: DvvEntry<V, A>, b: DvvEntry<V, A>): DvvEntry<V, A> {
  const aNewer = a[1] >= b[1]
  const newer = aNewer ? a : b
  const older = aNewer ? b : a
  const olderDiscardedUpTo = older[1] - older[2].length
  const keep = Math.min(newer[2].length, newer[1] - olderDiscardedUpTo)
  return keep === newer[2].length ? newer : [newer[0], newer[1], newer[2].slice(0, keep)]
}

function syncEntries<V, A extends DvvActor>(
  a: readonly DvvEntry<V, A>[],
  b: readonly DvvEntry<V, A>[],
): readonly DvvEntry<V, A>[] {
  if (a.length === 0) return b
  if (b.length === 0) return a
  const out: DvvEntry<V, A>[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const x = a[i]!
    const y = b[j]!
    const order = compareDvvActors(x[0], y[0])
    if (order < 0) {
      out.push(x)
      i++
    } else if (order > 0) {
      out.push(y)
      j++
    } else {
      out.push(mergeEntry(x, y))
      i++
      j++
    }
  }
  for (; i < a.length; i++) out.push(a[i]!)
  for (; j < b.length; j++) out.push(b[j]!)
  return out
}

/** Unique values of `a` then `b`, first occurrence first (SameValueZero, as a `Set`). */
function unionOf<V>(a: readonly V[], b: readonly V[]): readonly V[] {
  if (a.length + b.length === 0) return a
  return [...new Set([...a, ...b])]
}

function syncPair<V, A extends DvvActor>(a: DvvSet<V, A>, b: DvvSet<V, A>): DvvSet<V, A> {
  let anonymous: readonly V[]
  if (less(a, b)) anonymous = b.anonymous
  else if (less(b, a)) anonymous = a.anonymous
  else anonymous = unionOf(a.anonymous, b.anonymous)
  return { entries: syncEntries(a.entries, b.entries), anonymous }
}

/**
 * Merges replicas of one key (`sync/1`): the union of their histories, keeping only the values
 * no other set has superseded. Anonymous values: those of a strictly newer side win; when
 * neither side dominates, both lists are unioned without duplicates. The reference's union
 * (`sets:from_list`) has no defined order and compares values as Erlang terms; ours keeps first
 * occurrences in argument order and compares with SameValueZero, which for JSON texts is exact
 * text equality. Syncing no sets gives the empty set (the reference returns a non-set `{}`).
 */
function sync<V, A extends DvvActor>(sets: readonly DvvSet<V, A>[]): DvvSet<V, A> {
  if (sets.length === 0) return { entries: [], anonymous: [] }
  let acc = sets[0]!
  for (let k = 1; k < sets.length; k++) acc = syncPair(acc, sets[k]!)
  return acc
}

/**
 * True when two sets have the same history and the same number of values per actor
 * (`equal/2`). Value contents and the anonymous values are not compared. (The reference also
 * takes two version vectors here but then only matches `[actor, counter, values]` triples, so two
 * non-empty vectors never compare equal; this port accepts sets only.)
 */
function equal(a: DvvSet<unknown, DvvActor>, b: DvvSet<unknown, DvvActor>): boolean {
  if (a.entries.length !== b.entries.length) return false
  for (let i = 0; i < a.entries.length; i++) {
    const x = a.entries[i]!
    const y = b.entries[i]!
    if (x[0] !== y[0] || x[1] !== y[1] || x[2].length !== y[2].length) return false
  }
  return true
}

/** Every value (`values/1`): the anonymous ones first, then each actor's, in actor order. */
function values<V>(set: DvvSet<V, DvvActor>): V[] {
  const out = set.anonymous.slice()
  for (const entry of set.entries) out.push(...entry[2])
  return out
}

/** How many values the set holds (`size/1`), anonymous ones included. */
function size(set: DvvSet<unknown, DvvActor>): number {
  let n = set.anonymous.length
  for (const entry of set.entries) n += entry[2].length
  return n
}

/** The actors of the set's entries, in order (`ids/1`). */
function ids<A extends DvvActor>(set: DvvSet<unknown, A>): A[] {
  return set.entries.map((entry) => entry[0])
}

/** The same set with `fn` applied to every value (`map/2`); the history is unchanged. */
function map<V, W, A extends DvvActor>(fn: (value: V) => W, set: DvvSet<V, A>): DvvSet<W, A> {
  return {
    entries: set.entries.map(([actor, counter, vs]) => [actor, counter, vs.map(fn)] as const),
    anonymous: set.anonymous.map(fn),
  }
}

/**
 * Resolves the siblings with `merge` (given all values, see {@link values}) into one value
 * (`reconcile/2`). The result keeps the history and holds the merged value as its only,
 * anonymous, value: `new(join(set), merge(values(set)))`.
 *
 * Do not store the result to resolve siblings: an update whose context equals this history keeps
 * anonymous values (as in the reference), so the merged value would outlive writes that had seen
 * it. Write the merged value with `update(new(join(set), merged), local, actor)` instead.
 */
function reconcile<V, A extends DvvActor>(
  merge: (values: V[]) => V,
  set: DvvSet<V, A>,
): DvvSet<V, A> {
  return createSet(join(set), merge(values(set)))
}

interface Winner<V, A> {
  value: V
  /** The entry it heads, or `undefined` when it is anonymous. */
  actor: A | undefined
}

/**
 * The candidates are the newest value of each actor, in actor order, then every anonymous value,
 * in order; a candidate replaces the current best when `lessOrEqual(best, candidate)`, so on a tie
 * the later candidate wins, exactly as in the reference.
 */
function findLatest<V, A extends DvvActor>(
  lessOrEqual: (a: V, b: V) => boolean,
  set: DvvSet<V, A>,
): Winner<V, A> {
  let best: Winner<V, A> | undefined
  const consider = (value: V, actor: A | undefined): void => {
    if (best === undefined || lessOrEqual(best.value, value)) best = { value, actor }
  }
  for (const [actor, , vs] of set.entries) if (vs.length > 0) consider(vs[0]!, actor)
  for (const value of set.anonymous) consider(value, undefined)
  if (best === undefined) throw bug('lww/last need a set with at least one value')
  return best
}

/**
 * The latest value by `lessOrEqual(a, b)` ("a ≤ b"), among the newest value of each actor and
 * the anonymous values (`last/2`); see {@link lww} for ties.
 * @throws `CausewayError('INTERNAL')` on a set with no values (the reference crashes).
 */
function last<V>(lessOrEqual: (a: V, b: V) => boolean, set: DvvSet<V, DvvActor>): V {
  return findLatest(lessOrEqual, set).value
}

/**
 * Keeps only the latest value (`lww/2`), chosen as in {@link last}: candidates are the newest
 * value of each actor (in actor order) then the anonymous values, and on a tie the later
 * candidate wins. A winner from an actor's entry stays there alone (every other entry is emptied,
 * counters kept); an anonymous winner gives `new(join(set), winner)` (see {@link reconcile} on
 * storing anonymous values).
 * @throws `CausewayError('INTERNAL')` on a set with no values (the reference crashes).
 */
function lww<V, A extends DvvActor>(
  lessOrEqual: (a: V, b: V) => boolean,
  set: DvvSet<V, A>,
): DvvSet<V, A> {
  const winner = findLatest(lessOrEqual, set)
  if (winner.actor === undefined) return createSet(join(set), winner.value)
  return {
    entries: set.entries.map(([actor, counter]) =>
      actor === winner.actor
        ? ([actor, counter, [winner.value]] as const)
        : ([actor, counter, []] as const),
    ),
    anonymous: [],
  }
}

/**
 * The DVV set operations, named as in the reference (`dvvset:sync/1` is `DvvSet.sync`). Pure
 * functions over {@link DvvSet} values.
 */
export const DvvSet = {
  new: createSet,
  newList,
  update,
  sync,
  join,
  less,
  equal,
  values,
  size,
  ids,
  map,
  reconcile,
  lww,
  last,
} as const
