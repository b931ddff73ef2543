/**
 * The chaos suite's table of faults. Each scenario starts a fresh cluster, runs the workload,
 * injects its fault mid-run at region 0 (partition 0 where it hits one), heals it after the
 * outage, and leaves the judging to `chaos-checks.ts`.
 */
import type { EmbeddedChaosCluster } from './embedded-chaos-cluster.js'
import type { RedisChaosCluster } from './redis-chaos-cluster.js'

/** Where a fault hit and when, as the scenario reports it. */
export interface Injected {
  /** `performance.now()` at the moment of the fault (the kill, the stop, the cut). */
  at: number
  region: number
  partition?: number
  /** What exactly was hit, for the report. */
  target: string
}

interface ScenarioBase {
  /** Name on the command line (`--only`) and in the table. */
  name: string
  /** The fault, in the table's words. */
  fault: string
  /** In the short mode CI runs on every change. */
  short: boolean
  /**
   * Why it fails today, when it does (the issue item that fixes it). Such scenarios stay out of
   * the short mode until fixed; the full run still runs them and reports them failing.
   */
  knownFailure?: string
}

/** A scenario on `causeway dev --backend redis`. */
export interface RedisScenario extends ScenarioBase {
  backend: 'redis'
  /** By region id, ms added to the region's clock for the whole run. */
  clockOffsetMs?: readonly number[]
  inject(cluster: RedisChaosCluster): Promise<Injected & { heal: () => Promise<void> }>
}

/** A scenario on the embedded cluster (`causeway dev --data`). */
export interface EmbeddedScenario extends ScenarioBase {
  backend: 'embedded'
  inject(cluster: EmbeddedChaosCluster): Promise<Injected & { heal: () => Promise<void> }>
}

export type Scenario = RedisScenario | EmbeddedScenario

/** The partition every server fault hits, in region 0. */
const P = 0

function killAndRestartRedis(
  replica: number,
  damage: 'none' | 'truncated-aof' | 'wiped',
): RedisScenario['inject'] {
  return async (cluster) => {
    const noted = await cluster.killRedis(0, P, replica, {
      noteAofFirst: damage === 'truncated-aof',
    })
    const at = performance.now()
    return {
      at,
      region: 0,
      partition: P,
      target: `redis-server replica ${replica} of partition ${P} in region 0`,
      heal: () => cluster.restartRedis(0, P, replica, damage, noted.aofLength),
    }
  }
}

/** Every scenario, in the table's order. */
export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'no-fault',
    backend: 'redis',
    fault: 'none: the control run (the checks on a healthy cluster)',
    short: false,
    inject: async () => ({
      at: performance.now(),
      region: 0,
      target: 'nothing',
      heal: async () => {},
    }),
  },
  {
    name: 'leader-kill',
    backend: 'redis',
    fault: 'kill -9 of a partition leader (redis-server), restarted on its data',
    short: true,
    inject: killAndRestartRedis(0, 'none'),
  },
  {
    name: 'leader-lost',
    backend: 'redis',
    fault:
      'kill -9 of a partition leader, kept down until Sentinel has promoted a follower, then restarted on its data (it rejoins as a follower)',
    short: true,
    inject: async (cluster) => {
      await cluster.killRedis(0, P, 0)
      return {
        at: performance.now(),
        region: 0,
        partition: P,
        target: `redis-server replica 0 of partition ${P} in region 0`,
        heal: async () => {
          await promoted(cluster, 0, P)
          await cluster.restartRedis(0, P, 0, 'none')
        },
      }
    },
  },
  {
    name: 'truncated-aof-leader',
    backend: 'redis',
    fault: 'kill -9 of a partition leader, restarted with its AOF cut to its length 1 s before',
    short: true,
    inject: killAndRestartRedis(0, 'truncated-aof'),
  },
  {
    name: 'wiped-leader',
    backend: 'redis',
    fault: 'kill -9 of a partition leader, restarted with its data directory wiped',
    short: true,
    inject: killAndRestartRedis(0, 'wiped'),
  },
  {
    name: 'follower-kill',
    backend: 'redis',
    fault: 'kill -9 of a follower (redis-server), restarted on its data',
    short: true,
    inject: killAndRestartRedis(1, 'none'),
  },
  {
    name: 'gateway-kill',
    backend: 'redis',
    fault: 'kill -9 of a gateway process (one of two in the region), restarted',
    short: true,
    inject: async (cluster) => {
      const holder = await cluster.leaseHolder(0)
      // Another gateway than the one shipping most (with two partitions it may ship one).
      const g = cluster.gateways.find((x) => x.region === 0 && x !== holder) ?? holder
      await cluster.signalGateway(g, 'SIGKILL')
      return {
        at: performance.now(),
        region: 0,
        target: `gateway ${g.region}.${g.index}`,
        heal: () => cluster.restartGateway(g),
      }
    },
  },
  {
    name: 'lease-holder-kill',
    backend: 'redis',
    fault: 'kill -9 of the gateway holding the shipping leases, restarted',
    short: true,
    inject: async (cluster) => {
      const g = await cluster.leaseHolder(0)
      await cluster.signalGateway(g, 'SIGKILL')
      return {
        at: performance.now(),
        region: 0,
        target: `gateway ${g.region}.${g.index} (shipping lease holder)`,
        heal: () => cluster.restartGateway(g),
      }
    },
  },
  {
    name: 'gateway-sigstop',
    backend: 'redis',
    fault: 'SIGSTOP of the gateway other regions ship to, SIGCONT after the outage',
    short: true,
    inject: async (cluster) => {
      // Region 1's first gateway: region 0's shippers send to it (and clients reach it too).
      const g = cluster.gateway(1, 0)
      await cluster.signalGateway(g, 'SIGSTOP')
      return {
        at: performance.now(),
        region: 1,
        target: `gateway ${g.region}.${g.index}`,
        heal: () => cluster.signalGateway(g, 'SIGCONT'),
      }
    },
  },
  {
    name: 'shipping-cut',
    backend: 'redis',
    fault: 'shipping between the regions cut (black-holed), then healed',
    short: true,
    inject: async (cluster) => {
      cluster.cutShipping()
      return {
        at: performance.now(),
        region: 0,
        target: 'every shipping link',
        heal: async () => cluster.healShipping(),
      }
    },
  },
  {
    name: 'clock-skew',
    backend: 'redis',
    fault: "region 1's clock 2 s behind region 0's for the whole run (maxSkewMs 30 s)",
    // The 45 s case below covers it in CI's short mode.
    short: false,
    clockOffsetMs: [0, -2_000],
    inject: async () => ({
      at: performance.now(),
      region: 1,
      target: 'region 1 clock -2000 ms',
      heal: async () => {},
    }),
  },
  {
    name: 'clock-skew-beyond-max',
    backend: 'redis',
    fault: "region 1's clock 45 s behind region 0's for the whole run (maxSkewMs 30 s)",
    short: true,
    clockOffsetMs: [0, -45_000],
    inject: async () => ({
      at: performance.now(),
      region: 1,
      target: 'region 1 clock -45000 ms',
      heal: async () => {},
    }),
  },
  {
    name: 'embedded-kill',
    backend: 'embedded',
    fault: 'kill -9 of the whole embedded cluster (causeway dev --data), restarted on its data',
    short: true,
    inject: async (cluster) => {
      await cluster.kill()
      return {
        at: performance.now(),
        region: 0,
        target: `causeway dev (pid ${cluster.pid})`,
        heal: () => cluster.restart(),
      }
    },
  },
]

// Resolves once region `d`'s status shows partition `p` led by a replica other than 0 (at most
// 60 s): the promotion Sentinel made.
async function promoted(cluster: RedisChaosCluster, d: number, p: number): Promise<void> {
  const deadline = performance.now() + 60_000
  while (performance.now() < deadline) {
    try {
      const res = await fetch(`${cluster.urls[d]}/v1/status`, {
        signal: AbortSignal.timeout(2000),
      })
      const status = (await res.json()) as {
        leaders?: { partition: number; replica: number; state: string }[]
      }
      const leader = status.leaders?.find((l) => l.partition === p)
      if (leader && leader.replica !== 0 && leader.state === 'leading') return
    } catch {
      // the gateway is busy: ask again
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`partition ${p} of region ${d} was not taken over within 60 s`)
}
