/**
 * The deployment config of a Redis-backed cluster (`causeway gateway --config cluster.json`): the
 * cluster's id and shape, each region's public URL, its gateways and the Redis server of every
 * partition replica, auth, limits and shipping options. Every gateway process of every region
 * reads the same file. It is checked strictly (unknown fields are errors) against a TypeBox
 * schema, then for what a schema cannot say (counts that must agree, unique names), and every
 * problem is reported with its path in the file. `docs/operations.md` documents it with an example.
 */
import { readFile } from 'node:fs/promises'
import {
  CONFLICT_MODES,
  DEFAULT_LIMITS,
  type Limits,
  type Namespaces,
  SHIPPING_MODES,
  type ShippingMode,
  checkNamespaces,
  hasTransactions,
} from '@causeway/core'
import { type Static, Type } from 'typebox'
import { DEFAULT_MAX_CLOCK_OFFSET_MS, DEFAULT_SKEW_WAIT_MS } from '../cluster/replica-router.js'
import { KEY_ACCESSES, type ApiKeySpec } from '../http/auth.js'
import type { HttpLimits } from '../http/http-limits.js'
import { DEFAULT_RATE_LIMIT } from '../http/rate-limit.js'
import { Value } from 'typebox/value'

/** Version of the config format. */
export const CONFIG_FORMAT = 1

const MAX_REGIONS = 255
/** Most a dev or test clock may be offset from the real one (a day), in ms. */
const MAX_CLOCK_OFFSET_MS = 86_400_000

const HttpUrl = Type.String({
  pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
  description: 'an http:// or https:// base URL, without query or fragment',
})
const RedisUrl = Type.String({
  pattern: '^rediss?://[^\\s]+$',
  description: 'a Redis URL: redis://[user:password@]host:port[/db] (rediss:// for TLS)',
})
const Ms = (description: string) => Type.Integer({ minimum: 1, maximum: 3_600_000, description })

/** A secret given in the file, or the name of an environment variable holding it. */
const SecretSchema = Type.Union(
  [
    Type.String({ minLength: 16, maxLength: 512 }),
    Type.Object({ env: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  ],
  {
    description:
      'must be a string of 16 to 512 characters, or { "env": "NAME" } to read it from the environment',
  },
)

/** An API key with a scope (`http/auth.ts`). */
const ScopedKeySchema = Type.Object(
  {
    key: SecretSchema,
    name: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_.-]{1,64}$',
        description: 'letters, digits, _ . or -: names the key in logs and rate-limit counters',
      }),
    ),
    namespaces: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 1,
          maxLength: 128,
          pattern: '^[^:]*$',
          description: 'a namespace name: 1 to 128 characters without ":"',
        }),
        {
          maxItems: 1024,
          description: 'the key namespaces it may use (the text before a key’s first `:`)',
        },
      ),
    ),
    access: Type.Optional(Type.Enum([...KEY_ACCESSES])),
    rateLimit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100_000_000, description: 'requests per window' }),
    ),
  },
  { additionalProperties: false },
)

const RegionConfigSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9_.-]{0,63}$',
      description:
        'letters, digits, _ . or -, starting with a letter (so that it never reads as a region id)',
    }),
    url: HttpUrl,
    gateways: Type.Optional(Type.Array(HttpUrl, { minItems: 1, maxItems: 256 })),
    replicas: Type.Array(Type.Array(RedisUrl, { minItems: 1, maxItems: 99 }), {
      minItems: 1,
      maxItems: 65_536,
    }),
    transactions: Type.Optional(
      Type.Array(RedisUrl, {
        minItems: 1,
        maxItems: 99,
        description:
          'the region’s transaction log: its Redis server, then that server’s Redis replicas (needed with transactional namespaces)',
      }),
    ),
    sentinels: Type.Optional(
      Type.Array(RedisUrl, {
        minItems: 1,
        maxItems: 64,
        description:
          'the Redis Sentinels that watch this region’s partition leaders (each partition a master named `sentinelMasterName`); with them the gateways follow Sentinel’s promotions',
      }),
    ),
  },
  { additionalProperties: false },
)

/** The schema of `cluster.json` as written (before defaults and secrets are resolved). */
export const ClusterConfigFileSchema = Type.Object(
  {
    format: Type.Literal(CONFIG_FORMAT),
    cluster: Type.String({ minLength: 1, maxLength: 128, description: 'the cluster id' }),
    partitions: Type.Integer({ minimum: 1, maximum: 65_536 }),
    regions: Type.Array(RegionConfigSchema, { minItems: 1, maxItems: MAX_REGIONS }),
    auth: Type.Optional(
      Type.Object(
        {
          apiKeys: Type.Optional(
            Type.Array(
              Type.Union([SecretSchema, ScopedKeySchema], {
                description:
                  'must be a secret (a string of 16 to 512 characters, or { "env": "NAME" }), or a scoped key { "key": secret, "name"?, "namespaces"?: [...], "access"?: "read" | "write" | "read-write", "rateLimit"? }',
              }),
              { maxItems: 1024 },
            ),
          ),
          clusterSecret: Type.Optional(SecretSchema),
          // Secrets rotated out: sibling contexts they signed are still accepted.
          previousClusterSecrets: Type.Optional(Type.Array(SecretSchema, { maxItems: 8 })),
        },
        { additionalProperties: false },
      ),
    ),
    http: Type.Optional(
      Type.Object(
        {
          headersTimeoutMs: Type.Optional(
            Ms("most time from a request's first byte to its last header"),
          ),
          bodyTimeoutMs: Type.Optional(Ms('longest pause while a request body arrives')),
          requestTimeoutMs: Type.Optional(Ms("most time from a request's first byte to its last")),
          connectionTimeoutMs: Type.Optional(Ms('close a connection silent both ways this long')),
          maxConnections: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
          maxConnectionsPerAddress: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 1_000_000,
              description: 'connections one client address may hold (default: maxConnections / 10)',
            }),
          ),
          maxBodyBytesInFlight: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 2 ** 40,
              description: 'request-body bytes in flight, all clients together (default: 256 MiB)',
            }),
          ),
          maxBodyBytesInFlightPerKey: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 2 ** 40,
              description:
                'request-body bytes in flight per API key (per address without one; default: 64 MiB)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    rateLimit: Type.Optional(
      Type.Object(
        {
          max: Type.Integer({
            minimum: 0,
            maximum: 100_000_000,
            description: 'requests per window per API key (per address without one); 0: off',
          }),
          windowMs: Type.Optional(Ms('the window of the rate limit')),
          redis: Type.Optional(RedisUrl),
          maxRefused: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 100_000_000,
              description:
                'refused requests (401, 403) per window per client address before all its requests are refused; 0: off',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          maxKeyBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 65_536 })),
          maxValueBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 512 * 1024 * 1024 })),
          maxSkewMs: Type.Optional(Ms('how far ahead of the clock a write may depend')),
          defaultTimeoutMs: Type.Optional(Ms('deadline of a read that gives none')),
          maxTimeoutMs: Type.Optional(Ms('longest deadline a call may ask for')),
          maxTxKeys: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
          maxTxBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 512 * 1024 * 1024 })),
        },
        { additionalProperties: false },
      ),
    ),
    shipping: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            Type.Enum([...SHIPPING_MODES], {
              description:
                'fifo (each partition in order) or causal (Eunomia: causal across keys, levels causal)',
            }),
          ),
          thetaMs: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 60_000,
              description: 'causal: how often a region ships its stable labels, ms',
            }),
          ),
          deltaMs: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 60_000,
              description:
                'causal: how long a partition may write nothing before it is asked for a heartbeat, ms',
            }),
          ),
          maxAheadMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 3_600_000,
              description:
                "causal: how far ahead of the latest region clock known a write's dependency time may be, ms (a partition stamped ahead holds back its later writes' visibility in other regions by as much)",
            }),
          ),
          batchSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          maxBatchBytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 256 * 1024 * 1024 })),
          maxInFlight: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
          leaseMs: Type.Optional(Type.Integer({ minimum: 300, maximum: 600_000 })),
          requestTimeoutMs: Type.Optional(Ms('deadline of one request to another region')),
          retryMaxMs: Type.Optional(Ms('longest pause between shipping retries')),
          healthIntervalMs: Type.Optional(
            Ms("pause between two health checks of each of another region's gateways"),
          ),
          healthTimeoutMs: Type.Optional(
            Ms('a health check unanswered this long marks the gateway down'),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    namespaces: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object(
          {
            conflicts: Type.Optional(Type.Enum([...CONFLICT_MODES])),
            transactions: Type.Optional(Type.Boolean()),
            durability: Type.Optional(
              Type.Enum(['leader', 'majority'], {
                description:
                  "'majority': the namespace's writes are acknowledged once a majority of replicas hold them, and its reads return only what a majority holds",
              }),
            ),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "conflict mode by key namespace (the text before a key's first `:`): `siblings` keeps concurrent writes as siblings; unlisted namespaces are `lww`; `transactions: true` makes a namespace's keys written by transactions only",
        },
      ),
    ),
    transactions: Type.Optional(
      Type.Object(
        {
          durability: Type.Optional(
            Type.Enum(['leader', 'majority'], {
              description:
                'when a commit is in the log: at its leader, or at a majority of its servers',
            }),
          ),
          commitCache: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 10_000_000,
              description: 'transactions the applier’s commit cache indexes; 0: none',
            }),
          ),
          leaseMs: Type.Optional(Type.Integer({ minimum: 300, maximum: 600_000 })),
          snapshotIdleMs: Type.Optional(Ms('how long a snapshot stays open after a read')),
          snapshotMaxAgeMs: Type.Optional(Ms('how long a snapshot stays open at most')),
        },
        { additionalProperties: false },
      ),
    ),
    benchmark: Type.Optional(
      Type.Object(
        {
          wanDelayMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 3_600_000,
              description: 'emulated one-way delay of shipping between regions, in ms',
            }),
          ),
          partitionWanDelaysMs: Type.Optional(
            Type.Array(
              Type.Integer({
                minimum: 0,
                maximum: 3_600_000,
                description:
                  "emulated one-way delay of one partition's data between regions, ms (labels keep wanDelayMs)",
              }),
              { maxItems: 65_536 },
            ),
          ),
          withoutHlc: Type.Optional(
            Type.Boolean({
              description:
                'the NuKV "without HLC" ablation: writes wait for their dependency vector instead of using the HLC',
            }),
          ),
          clockOffsetsMs: Type.Optional(
            Type.Array(
              Type.Integer({
                minimum: -MAX_CLOCK_OFFSET_MS,
                maximum: MAX_CLOCK_OFFSET_MS,
                description: "ms added to a region's wall clock (dev and tests only)",
              }),
              { maxItems: MAX_REGIONS },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    clock: Type.Optional(
      Type.Object(
        {
          skewWaitMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 60_000,
              description:
                'how long a write whose causeway-dt is more than limits.maxSkewMs ahead of every region clock known waits for a later one, in ms',
            }),
          ),
          maxOffsetMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: MAX_CLOCK_OFFSET_MS,
              description:
                "how far another region's wall clock may run ahead of a region's, in ms; a causeway-dt further ahead than this plus limits.maxSkewMs is refused without waiting",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    redis: Type.Optional(
      Type.Object(
        {
          namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
          commandTimeoutMs: Type.Optional(Ms('deadline of one Redis call')),
          connectTimeoutMs: Type.Optional(Ms('deadline of a TCP connection to Redis')),
          reconnectMaxDelayMs: Type.Optional(Ms('longest pause between reconnection attempts')),
          failover: Type.Optional(
            Type.Object(
              {
                checkIntervalMs: Type.Optional(
                  Ms('how often each gateway looks at every partition’s leader'),
                ),
                recoveryTimeoutMs: Type.Optional(
                  Ms(
                    'how long a new leader may spend fetching, from the other regions, the entries of its region they received from the old leader',
                  ),
                ),
              },
              { additionalProperties: false },
            ),
          ),
          durability: Type.Optional(
            Type.Enum(['leader', 'majority'], {
              description:
                'the durability the deployment promises: the gateway checks at start that each server’s appendfsync (and the replica count) can keep it',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

/** `cluster.json` as written. */
export type ClusterConfigFile = Static<typeof ClusterConfigFileSchema>

/** One region of a {@link ClusterConfig}. */
export interface RegionConfig {
  id: number
  name: string
  /** Public base URL published in the topology (a load balancer, or the one gateway). */
  url: string
  /** Base URLs of the region's gateway processes; other regions ship to them. */
  gateways: string[]
  /** `replicas[p][i]`: the Redis URL of replica `i` of partition `p`; index 0 is the leader. */
  replicas: string[][]
  /** The Sentinels watching the region's partition leaders; empty without Sentinel. */
  sentinels: string[]
  /** The region's transaction log: its server, then its Redis replicas (with transactions). */
  transactions: string[] | undefined
}

/** Options of transactions (Nami). */
export interface TransactionsConfig {
  /** When a commit counts as in the log: at its server, or at a majority of its servers. */
  durability: 'leader' | 'majority'
  /** Transactions the applier's commit cache indexes; `false`: none. */
  commitCache: number | false
  /** How long a gateway's lease to run the region's applier lasts unless renewed. */
  leaseMs: number
  snapshotIdleMs: number
  snapshotMaxAgeMs: number
}

/** Options of cross-region shipping. */
export interface ShippingConfig {
  /**
   * How writes travel between regions: `fifo` (each partition's log in order) or `causal`
   * (Eunomia: the region's stabiliser orders the labels, receivers apply in causal order).
   * @default 'fifo'
   */
  mode: ShippingMode
  /** Causal: how often a region's stabiliser leader ships its stable labels, ms. @default 5 */
  thetaMs: number
  /** Causal: how long a partition may write nothing before it is asked for a heartbeat, ms. @default 10 */
  deltaMs: number
  /**
   * Causal: how far ahead of the latest region clock known a write's dependency time may be, ms
   * (`ReplicaRouterOptions.maxAheadMs`); further ahead, it waits up to `clock.skewWaitMs`, then
   * `CLOCK_SKEW_EXCEEDED`. A FIFO cluster uses `limits.maxSkewMs`. @default 250
   */
  maxAheadMs: number
  /** Most entries read from the log at once. */
  batchSize: number
  /** Most bytes of entries in one request to another region (a single larger entry goes alone). */
  maxBatchBytes: number
  /** Most batches read ahead of the acknowledgements. */
  maxInFlight: number
  /** How long a gateway's lease to ship a partition lasts unless renewed; it renews every third. */
  leaseMs: number
  /**
   * Deadline of one request to another region, in ms, when its gateway still passes its health
   * checks (a request to one that fails them is given up on at once).
   * @default 2000
   */
  requestTimeoutMs: number
  /** Longest pause between retries after a failure. */
  retryMaxMs: number
  /**
   * Pause between two health checks (`GET /healthz`) of each gateway of another region, in ms,
   * while this process ships to it.
   * @default 250
   */
  healthIntervalMs: number
  /**
   * A health check unanswered (with 200) this long marks its gateway down: requests to it are
   * aborted and shipping goes to another gateway of the region. With `healthIntervalMs`, it bounds
   * how long a hung gateway stalls shipping.
   * @default 500
   */
  healthTimeoutMs: number
}

/** Options of the Redis connections. */
export interface RedisConfig {
  /** Part of every Redis key, so clusters (or tenants) sharing servers never collide. */
  namespace: string
  commandTimeoutMs: number
  connectTimeoutMs: number
  reconnectMaxDelayMs: number
  /** The failover of partition leaders (`cluster/redis-failover.ts`). */
  failover: {
    /** How often each gateway looks at every partition's leader, in ms. @default 500 */
    checkIntervalMs: number
    /**
     * How long a new leader may spend recovering its region's entries from the other regions, in
     * ms. @default 2000
     */
    recoveryTimeoutMs: number
  }
  /**
   * The durability level the deployment promises (at least what the SDK's writes ask for), which
   * the gateway checks the servers' configuration against at start (`docs/failover.md`).
   * @default 'leader' (the SDK's default durability)
   */
  durability: 'leader' | 'majority'
}

/**
 * Switches for benchmarks and tests on one machine (`causeway dev --backend redis --wan-delay MS
 * --without-hlc --clock-offset MS`); never for a real deployment.
 */
export interface BenchmarkConfig {
  /** Emulated one-way delay of shipping between regions (and of its answers), in ms. */
  wanDelayMs: number
  /**
   * The one-way delay of each partition's data, by partition (missing: `wanDelayMs`), so that
   * partitions reach the other regions at different speeds; labels keep `wanDelayMs`.
   * @default []
   */
  partitionWanDelaysMs: number[]
  /**
   * The NuKV "without HLC" ablation: writes are stamped by the leader's clock alone and wait at
   * the leader for the dependency vector they carry (see `ablation/without-hlc.ts`).
   */
  withoutHlc: boolean
  /**
   * Milliseconds added to each region's wall clock, by region id (missing: 0), so that one
   * machine can run regions whose clocks disagree. A region with an offset stamps its HLCs from
   * this process's clock plus the offset instead of the Redis server's `TIME`.
   * @default []
   */
  clockOffsetsMs: number[]
}

/** How writes are checked against the clocks of the regions. */
export interface ClockConfig {
  /**
   * How long a write whose dependency time (`causeway-dt`) is more than `limits.maxSkewMs` ahead
   * of every region clock the region knows waits, in ms, for a later one to be known (another
   * region's shipped entries, or its own clock moving on) before `CLOCK_SKEW_EXCEEDED`.
   * @default 2000
   */
  skewWaitMs: number
  /**
   * How far another region's wall clock may run ahead of this region's, in ms: a dependency more
   * than `limits.maxSkewMs` past this region's clock plus this (and past every region clock it
   * knows) is refused at once, without the `skewWaitMs` wait.
   * @default 3600000 (an hour)
   */
  maxOffsetMs: number
}

/** The rate limit of a region's gateways. */
export interface RateLimitConfig {
  /** Requests per window per API key (per client address without one); 0: off. */
  max: number
  windowMs: number
  /**
   * The Redis server whose counters every gateway of a region shares.
   * @default the leader of the region's partition 0
   */
  redis: string | undefined
  /** Refused requests (401, 403) per window per client address; 0: not counted. */
  maxRefused: number
}

/** A checked config, with defaults filled in and secrets resolved. */
export interface ClusterConfig {
  format: typeof CONFIG_FORMAT
  cluster: string
  partitions: number
  regions: RegionConfig[]
  auth: {
    /** Bearer tokens clients may use, plain or scoped; none means client routes are open. */
    apiKeys: (string | ApiKeySpec)[]
    /** The token gateways of other regions use; required with more than one region. */
    clusterSecret: string | undefined
    /**
     * Cluster secrets rotated out: sibling contexts signed with them are still accepted (never
     * issued) until they are removed from the file. @default []
     */
    previousClusterSecrets: string[]
  }
  limits: Limits
  /**
   * Time limits, the connection cap and each address's share of it, and the budget of body bytes
   * in flight of each gateway (only those the file sets).
   */
  http: HttpLimits
  /** The rate limit of each gateway. */
  rateLimit: RateLimitConfig
  shipping: ShippingConfig
  redis: RedisConfig
  /** Key namespaces and their conflict mode (checked, null prototype); `{}`: all `lww`. */
  namespaces: Namespaces
  /** Benchmark switches; off (0 ms, with HLC) unless the file has a `benchmark` section. */
  benchmark: BenchmarkConfig
  transactions: TransactionsConfig
  clock: ClockConfig
}

/** Defaults of {@link ShippingConfig}. */
export const DEFAULT_SHIPPING: Readonly<ShippingConfig> = Object.freeze({
  mode: 'fifo',
  thetaMs: 5,
  deltaMs: 10,
  maxAheadMs: 250,
  batchSize: 256,
  maxBatchBytes: 4 * 1024 * 1024,
  maxInFlight: 8,
  leaseMs: 3000,
  requestTimeoutMs: 2000,
  retryMaxMs: 5000,
  healthIntervalMs: 250,
  healthTimeoutMs: 500,
})

/** A config that cannot be used; `problems` lists each, with its path in the file. */
export class ConfigError extends Error {
  readonly problems: string[]
  constructor(source: string, problems: string[]) {
    const shown = problems.slice(0, 12)
    const more =
      problems.length > shown.length ? [`... and ${problems.length - shown.length} more`] : []
    super(`${source} is not a valid cluster config:\n  ${[...shown, ...more].join('\n  ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

// `/regions/0/replicas/1/0` → `regions[0].replicas[1][0]`
function pathOf(pointer: string): string {
  const parts = pointer.split('/').slice(1)
  let out = ''
  for (const part of parts) {
    const name = part.replaceAll('~1', '/').replaceAll('~0', '~')
    out += /^[0-9]+$/.test(name) ? `[${name}]` : out === '' ? name : `.${name}`
  }
  return out === '' ? '(top level)' : out
}

// The schema a `#/properties/regions/items/...` path points to, for its description.
function schemaAt(path: string): { description?: string; const?: unknown } | undefined {
  let node: unknown = ClusterConfigFileSchema
  for (const part of path.replace(/^#\/?/, '').split('/')) {
    if (part === '') continue
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return typeof node === 'object' && node !== null
    ? (node as { description?: string; const?: unknown })
    : undefined
}

function schemaProblems(data: unknown): string[] {
  const problems: string[] = []
  const errors = [...Value.Errors(ClusterConfigFileSchema, data)]
  // A union (a secret) fails as a whole: say once what it accepts, not why each branch failed.
  const unions = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath))
  for (const error of errors) {
    const at = pathOf(error.instancePath)
    if (unions.has(error.instancePath)) {
      if (error.keyword === 'anyOf')
        problems.push(`${at}: ${schemaAt(error.schemaPath)?.description ?? error.message}`)
      continue
    }
    const params = error.params as Record<string, unknown>
    // TypeBox reports an unknown field twice (as `false` schema and as additionalProperties).
    if (error.keyword === 'boolean') continue
    if (error.keyword === 'additionalProperties') {
      const names = (params['additionalProperties'] as string[] | undefined) ?? []
      for (const name of names) problems.push(`${at}: unknown field ${JSON.stringify(name)}`)
      continue
    }
    if (error.keyword === 'required') {
      const names = (params['requiredProperties'] as string[] | undefined) ?? []
      const missing = names.length > 0 ? names.join(', ') : 'a field'
      problems.push(`${at}: missing ${missing}`)
      continue
    }
    const schema = schemaAt(error.schemaPath)
    const description = schema?.description
    if (error.keyword === 'const')
      problems.push(
        `${at}: must be ${JSON.stringify(schema?.const)} (this version reads format ${CONFIG_FORMAT})`,
      )
    else if (error.keyword === 'pattern' && description)
      problems.push(`${at}: must be ${description}`)
    else problems.push(`${at}: ${error.message}${description ? ` (${description})` : ''}`)
  }
  return [...new Set(problems)]
}

/**
 * Checks `data` (the parsed JSON of a config file) and returns the config with defaults filled in
 * and secrets resolved from `env`. Throws a {@link ConfigError} naming every problem.
 */
export function parseClusterConfig(
  data: unknown,
  source = 'the config',
  env: Readonly<Record<string, string | undefined>> = process.env,
): ClusterConfig {
  const problems = schemaProblems(data)
  if (problems.length > 0) throw new ConfigError(source, problems)
  const file = data as ClusterConfigFile

  const secret = (value: string | { env: string }, at: string): string | undefined => {
    if (typeof value === 'string') return value
    const resolved = env[value.env]
    if (resolved === undefined || resolved.length < 16) {
      problems.push(
        `${at}: environment variable ${value.env} is ${resolved === undefined ? 'not set' : 'shorter than 16 characters'}`,
      )
      return undefined
    }
    return resolved
  }

  const names = new Set<string>()
  file.regions.forEach((region, d) => {
    if (names.has(region.name))
      problems.push(`regions[${d}].name: ${JSON.stringify(region.name)} names two regions`)
    names.add(region.name)
    if (region.replicas.length !== file.partitions)
      problems.push(
        `regions[${d}].replicas: has ${region.replicas.length} partitions; the cluster has ${file.partitions}`,
      )
    const count = region.replicas[0]?.length ?? 0
    region.replicas.forEach((list, p) => {
      if (list.length !== count)
        problems.push(
          `regions[${d}].replicas[${p}]: has ${list.length} replicas; partition 0 of the region has ${count} (every partition of a region has as many)`,
        )
      if (new Set(list).size !== list.length)
        problems.push(`regions[${d}].replicas[${p}]: names one server twice`)
      list.forEach((url, i) => {
        if (!isRedisUrl(url)) problems.push(`regions[${d}].replicas[${p}][${i}]: not a redis URL`)
      })
    })
  })

  // The causal machinery keeps to each partition's configured leader (index 0): it does not follow
  // Sentinel's promotions yet, so the two are refused together rather than stall after a failover.
  if (file.shipping?.mode === 'causal')
    file.regions.forEach((r, d) => {
      if ((r.sentinels ?? []).length > 0)
        problems.push(
          `regions[${d}].sentinels: shipping.mode 'causal' does not follow Sentinel failover yet; use one or the other`,
        )
    })

  const delays = file.benchmark?.partitionWanDelaysMs ?? []
  if (delays.length > file.partitions)
    problems.push(
      `benchmark.partitionWanDelaysMs: has ${delays.length} delays; the cluster has ${file.partitions} partitions`,
    )
  const offsets = file.benchmark?.clockOffsetsMs ?? []
  if (offsets.length > file.regions.length)
    problems.push(
      `benchmark.clockOffsetsMs: has ${offsets.length} offsets; the cluster has ${file.regions.length} regions`,
    )

  const apiKeys = (file.auth?.apiKeys ?? [])
    .map((k, i): string | ApiKeySpec | undefined => {
      if (typeof k === 'string' || !('key' in k)) return secret(k, `auth.apiKeys[${i}]`)
      const key = secret(k.key, `auth.apiKeys[${i}].key`)
      return key === undefined ? undefined : { ...k, key }
    })
    .filter((k): k is string | ApiKeySpec => k !== undefined)
  const keyTokens = apiKeys.map((k) => (typeof k === 'string' ? k : k.key))
  const clusterSecret =
    file.auth?.clusterSecret === undefined
      ? undefined
      : secret(file.auth.clusterSecret, 'auth.clusterSecret')
  if (file.regions.length > 1 && file.auth?.clusterSecret === undefined)
    problems.push('auth.clusterSecret: required with more than one region (regions ship with it)')
  if (clusterSecret !== undefined && keyTokens.includes(clusterSecret))
    problems.push('auth: the cluster secret must not also be an API key')
  const previousClusterSecrets = (file.auth?.previousClusterSecrets ?? [])
    .map((s, i) => secret(s, `auth.previousClusterSecrets[${i}]`))
    .filter((s): s is string => s !== undefined)
  if (previousClusterSecrets.length > 0 && clusterSecret === undefined)
    problems.push('auth.previousClusterSecrets: needs auth.clusterSecret (the current one)')

  const limits: Limits = { ...DEFAULT_LIMITS, ...file.limits }
  if (limits.defaultTimeoutMs > limits.maxTimeoutMs)
    problems.push(
      `limits.defaultTimeoutMs: ${limits.defaultTimeoutMs} is above limits.maxTimeoutMs (${limits.maxTimeoutMs})`,
    )
  let namespaces: Namespaces = {}
  try {
    namespaces = checkNamespaces(file.namespaces)
  } catch (error) {
    problems.push(`namespaces: ${(error as Error).message}`)
  }
  // Transactions ship between regions as units ordered per region; in causal mode a unit would
  // need one causal timestamp and the receiver's ordering, which is not built: refused together.
  if (hasTransactions(namespaces) && file.shipping?.mode === 'causal')
    problems.push(
      "namespaces: transactional namespaces do not work with shipping.mode 'causal' yet; use fifo shipping, or no transactional namespace",
    )
  if (hasTransactions(namespaces))
    file.regions.forEach((region, d) => {
      if (region.transactions === undefined)
        problems.push(
          `regions[${d}].transactions: missing (transactional namespaces need each region’s transaction log)`,
        )
    })
  if (problems.length > 0) throw new ConfigError(source, problems)

  return {
    format: CONFIG_FORMAT,
    cluster: file.cluster,
    partitions: file.partitions,
    regions: file.regions.map((r, id) => ({
      id,
      name: r.name,
      url: trimSlash(r.url),
      gateways: (r.gateways ?? [r.url]).map(trimSlash),
      replicas: r.replicas.map((list) => [...list]),
      transactions: r.transactions && [...r.transactions],
      sentinels: [...(r.sentinels ?? [])],
    })),
    auth: { apiKeys, clusterSecret, previousClusterSecrets },
    limits,
    http: { ...file.http },
    rateLimit: {
      max: file.rateLimit?.max ?? DEFAULT_RATE_LIMIT.max,
      windowMs: file.rateLimit?.windowMs ?? DEFAULT_RATE_LIMIT.windowMs,
      redis: file.rateLimit?.redis,
      maxRefused: file.rateLimit?.maxRefused ?? DEFAULT_RATE_LIMIT.maxRefused,
    },
    shipping: { ...DEFAULT_SHIPPING, ...file.shipping },
    namespaces,
    transactions: {
      durability: file.transactions?.durability ?? 'majority',
      commitCache:
        file.transactions?.commitCache === 0 ? false : (file.transactions?.commitCache ?? 10_000),
      leaseMs: file.transactions?.leaseMs ?? 3000,
      snapshotIdleMs: file.transactions?.snapshotIdleMs ?? 30_000,
      snapshotMaxAgeMs: file.transactions?.snapshotMaxAgeMs ?? 300_000,
    },
    benchmark: {
      wanDelayMs: file.benchmark?.wanDelayMs ?? 0,
      partitionWanDelaysMs: [...(file.benchmark?.partitionWanDelaysMs ?? [])],
      withoutHlc: file.benchmark?.withoutHlc ?? false,
      clockOffsetsMs: [...(file.benchmark?.clockOffsetsMs ?? [])],
    },
    clock: {
      skewWaitMs: file.clock?.skewWaitMs ?? DEFAULT_SKEW_WAIT_MS,
      maxOffsetMs: file.clock?.maxOffsetMs ?? DEFAULT_MAX_CLOCK_OFFSET_MS,
    },
    redis: {
      namespace: file.redis?.namespace ?? file.cluster,
      commandTimeoutMs: file.redis?.commandTimeoutMs ?? 5000,
      connectTimeoutMs: file.redis?.connectTimeoutMs ?? 2000,
      reconnectMaxDelayMs: file.redis?.reconnectMaxDelayMs ?? 1000,
      failover: {
        checkIntervalMs: file.redis?.failover?.checkIntervalMs ?? 500,
        recoveryTimeoutMs: file.redis?.failover?.recoveryTimeoutMs ?? 2000,
      },
      durability: (file.redis?.durability as 'leader' | 'majority' | undefined) ?? 'leader',
    },
  }
}

/** Reads and checks a config file. Throws a {@link ConfigError}, or an error saying it cannot be read. */
export async function loadClusterConfig(
  path: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ClusterConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new Error(`cannot read the cluster config ${path}: ${(error as Error).message}`, {
      cause: error,
    })
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(path, [`not valid JSON: ${(error as Error).message}`])
  }
  return parseClusterConfig(data, path, env)
}

/** The region a `--region` argument names (a name or an id), or undefined. */
export function findRegion(config: ClusterConfig, nameOrId: string): RegionConfig | undefined {
  if (/^[0-9]+$/.test(nameOrId)) return config.regions[Number(nameOrId)]
  return config.regions.find((r) => r.name === nameOrId)
}

function isRedisUrl(text: string): boolean {
  try {
    const url = new URL(text)
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return false
    const db = url.pathname.length > 1 ? url.pathname.slice(1) : '0'
    return url.hostname !== '' && /^[0-9]{1,2}$/.test(db)
  } catch {
    return false
  }
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * The name under which the Sentinels of region `region` watch the leader of `partition`
 * (`SENTINEL MONITOR <name> ...`): the namespace (letters, digits, `.`, `_` and `-` kept, the rest
 * as `_`), then the region and partition.
 */
export function sentinelMasterName(namespace: string, region: number, partition: number): string {
  return `${namespace.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64)}-r${region}-p${partition}`
}
