/**
 * Namespaces and their conflict mode. A key's namespace is the text before its first `:`
 * (`cart:42` is in `cart`); a key without `:` is in no namespace. The cluster configures a
 * conflict mode per namespace and publishes it in its topology, so the gateway and the SDK agree
 * on how a key's concurrent writes are resolved:
 *
 * - `lww` (the default): last writer wins by `(ts, dc)`; a read returns one version.
 * - `siblings`: concurrent writes are kept side by side in a DVV set ({@link DvvSet}); a read
 *   returns every sibling and a causal context, and a write that passes that context supersedes
 *   what it saw.
 *
 * A last-writer-wins namespace may also be `transactions: true` (Nami): its keys are written only
 * by transactions (`db.transaction()`), which are ordered by the region's transaction log, and
 * read at a snapshot of it. Transactions touch keys of such namespaces only.
 */
/** How concurrent writes to a key are resolved. */
export type ConflictMode = 'lww' | 'siblings'

/** Every {@link ConflictMode}. */
export const CONFLICT_MODES: readonly ConflictMode[] = ['lww', 'siblings']

/** The configuration of one namespace. */
export interface NamespaceConfig {
  /**
   * How concurrent writes to its keys are resolved. Required unless `transactions: true`
   * (`checkNamespaces` fills it in).
   * @default 'lww' (transactional namespaces only)
   */
  conflicts?: ConflictMode
  /**
   * Its keys are written by transactions only, through the region's transaction log; a plain
   * write of one is refused (`TRANSACTION_REQUIRED`). Only with `conflicts: 'lww'`.
   * @default false (absent)
   */
  transactions?: true
  /**
   * `'majority'`: its writes are acknowledged once a majority of the partition's replicas hold
   * them, whatever durability a request asks (`'majority'` is its floor), and its reads return
   * only what a majority holds (committed reads, NuKV's requirement R2): a read whose newest
   * version of this region is not yet held by a majority waits until it is, within its timeout.
   * Not with `transactions: true` (transactions have `transactions.durability`).
   * @default absent: writes at the durability they ask (`'leader'` by default), reads see what
   * the serving replica holds
   */
  durability?: 'majority'
}

/** Namespace configurations by name; a namespace not listed uses the defaults. */
export type Namespaces = Readonly<Record<string, NamespaceConfig>>

/** The conflict mode of keys in a namespace that is not configured, and of keys without one. */
export const DEFAULT_CONFLICT_MODE: ConflictMode = 'lww'

/** Longest namespace name, in UTF-16 code units. */
export const MAX_NAMESPACE_LENGTH = 128

/** The namespace of `key`: the text before its first `:`, or `undefined` when it has none. */
export function namespaceOf(key: string): string | undefined {
  const colon = key.indexOf(':')
  return colon < 0 ? undefined : key.slice(0, colon)
}

/** The conflict mode of `key` under `namespaces`. */
export function conflictModeOf(key: string, namespaces: Namespaces | undefined): ConflictMode {
  const ns = namespaceOf(key)
  if (ns === undefined || namespaces === undefined || !Object.hasOwn(namespaces, ns))
    return DEFAULT_CONFLICT_MODE
  return namespaces[ns]!.conflicts ?? DEFAULT_CONFLICT_MODE
}

/** True when `key` is in a namespace configured `transactions: true` under `namespaces`. */
export function isTransactionalKey(key: string, namespaces: Namespaces | undefined): boolean {
  const ns = namespaceOf(key)
  if (ns === undefined || namespaces === undefined || !Object.hasOwn(namespaces, ns)) return false
  return namespaces[ns]!.transactions === true
}

/**
 * True when `key` is in a namespace configured `durability: 'majority'` under `namespaces`: its
 * writes are majority writes and its reads committed reads.
 */
export function isMajorityKey(key: string, namespaces: Namespaces | undefined): boolean {
  const ns = namespaceOf(key)
  if (ns === undefined || namespaces === undefined || !Object.hasOwn(namespaces, ns)) return false
  return namespaces[ns]!.durability === 'majority'
}

/** True when any namespace of `namespaces` is configured `transactions: true`. */
export function hasTransactions(namespaces: Namespaces | undefined): boolean {
  if (namespaces === undefined) return false
  return Object.values(namespaces).some((config) => config.transactions === true)
}

/** True when `name` can name a namespace: 1 to 128 characters, well-formed, without `:`. */
export function isNamespaceName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= MAX_NAMESPACE_LENGTH &&
    !name.includes(':') &&
    name.isWellFormed()
  )
}

/**
 * Checks a namespace configuration (from options, a config file or a topology) and returns a
 * normalised copy with a null prototype, so a namespace named `__proto__` or `constructor` is
 * data like any other.
 * @throws `RangeError` naming the first bad namespace or setting.
 */
export function checkNamespaces(namespaces: unknown): Namespaces {
  const out = Object.create(null) as Record<string, NamespaceConfig>
  if (namespaces === undefined) return out
  if (typeof namespaces !== 'object' || namespaces === null || Array.isArray(namespaces))
    throw bad('namespaces must be an object of { conflicts, transactions } by namespace name')
  for (const [name, config] of Object.entries(namespaces)) {
    if (!isNamespaceName(name))
      throw bad(
        `bad namespace name ${JSON.stringify(name)}: 1 to ${MAX_NAMESPACE_LENGTH} characters without ':'`,
      )
    if (typeof config !== 'object' || config === null || Array.isArray(config))
      throw bad(`namespace ${JSON.stringify(name)} needs an object { conflicts, transactions }`)
    const given = config as { conflicts?: unknown; transactions?: unknown; durability?: unknown }
    const extra = Object.keys(config).find(
      (k) => k !== 'conflicts' && k !== 'transactions' && k !== 'durability',
    )
    if (extra !== undefined)
      throw bad(`namespace ${JSON.stringify(name)} has an unknown setting ${JSON.stringify(extra)}`)
    const transactions = given.transactions
    if (transactions !== undefined && typeof transactions !== 'boolean')
      throw bad(`namespace ${JSON.stringify(name)}: transactions must be true or false`)
    // A transactional namespace may leave its (last-writer-wins) conflict mode out.
    const conflicts =
      given.conflicts === undefined && transactions === true ? 'lww' : given.conflicts
    if (!(CONFLICT_MODES as readonly unknown[]).includes(conflicts))
      throw bad(
        `namespace ${JSON.stringify(name)}: conflicts must be one of ${CONFLICT_MODES.join(', ')}, not ${JSON.stringify(conflicts)}`,
      )
    if (transactions === true && conflicts !== 'lww')
      throw bad(
        `namespace ${JSON.stringify(name)}: transactions need last-writer-wins keys (conflicts: 'lww')`,
      )
    const durability = given.durability
    if (durability !== undefined && durability !== 'leader' && durability !== 'majority')
      throw bad(
        `namespace ${JSON.stringify(name)}: durability must be 'leader' or 'majority', not ${JSON.stringify(durability)}`,
      )
    if (durability === 'majority' && transactions === true)
      throw bad(
        `namespace ${JSON.stringify(name)}: a transactional namespace's durability is transactions.durability, not its own`,
      )
    out[name] =
      transactions === true
        ? { conflicts: conflicts as ConflictMode, transactions: true }
        : durability === 'majority'
          ? { conflicts: conflicts as ConflictMode, durability: 'majority' }
          : { conflicts: conflicts as ConflictMode }
  }
  return out
}

function bad(message: string): RangeError {
  return new RangeError(message)
}
