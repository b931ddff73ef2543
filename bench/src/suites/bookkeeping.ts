/**
 * Suite `bookkeeping`: the SDK's own cost per call, with 4 and with 1,000 partitions touched.
 *
 * - session bookkeeping alone (core's `Session`): partition lookup, the read vector and its
 *   header, the write dependency, recording the reply, serialising the session;
 * - a whole call through the real client with a transport that answers at once: validation,
 *   partition, vector, header, URL, deadline, reply checks and session update, i.e. everything
 *   the SDK adds on top of the network.
 */
import {
  DEFAULT_LIMITS,
  Session,
  type Topology,
  formatReadNeed,
  hlcFrom,
  partitionOf,
} from '@causeway/core'
import { type Causeway, type Transport, connect } from '@causeway/client'
import { Bench } from 'tinybench'
import { table } from '../report/markdown.js'
import type { Suite } from '../suite.js'

/** One measured case. */
export interface BookkeepingRow {
  case: string
  touched: number
  /** Median time per call, ns (robust to preemption on a shared machine). */
  medianNs: number
  nsPerCall: number
  p99Ns: number
  samples: number
}

const REGIONS = 3
const PARTITIONS = 1024
const EPOCH = 1

/** `count` keys, each in a different partition. */
function keysOnDistinctPartitions(count: number): string[] {
  const keys: string[] = []
  const seen = new Set<number>()
  for (let i = 0; seen.size < count; i++) {
    const key = `user:${i}:profile`
    const p = partitionOf(key, PARTITIONS)
    if (seen.has(p)) continue
    seen.add(p)
    keys.push(key)
  }
  return keys
}

/** A session that has read and written every key's partition (both rows filled). */
function sessionTouching(keys: readonly string[]): Session {
  const session = new Session({ cluster: 'bench', regions: REGIONS, partitions: PARTITIONS })
  keys.forEach((key, i) => {
    const p = partitionOf(key, PARTITIONS)
    const ms = 1_700_000_000_000 + i
    session.observeWrite(p, { dc: i % REGIONS, idx: 1000 + i, ts: hlcFrom(ms, 0), epoch: EPOCH })
    session.observeRead(p, {
      dc: (i + 1) % REGIONS,
      idx: 2000 + i,
      ts: hlcFrom(ms, 1),
      epoch: EPOCH,
    })
  })
  return session
}

const topology: Topology = {
  cluster: 'bench',
  protocol: 1,
  region: 0,
  regions: Array.from({ length: REGIONS }, (_, id) => ({
    id,
    name: `r${id}`,
    url: `http://r${id}.bench.invalid`,
  })),
  partitions: PARTITIONS,
  replicas: 3,
  epochs: new Array<number>(PARTITIONS).fill(EPOCH),
  limits: { ...DEFAULT_LIMITS },
  shipping: 'fifo',
}

/**
 * Wall-clock ms of the replies' HLCs: an hour behind now, so that timestamps growing by one ms a
 * call stay behind the device's clock (the SDK refuses a reply more than two hours ahead).
 */
const REPLY_MS = Date.now() - 60 * 60 * 1000

/**
 * A transport that answers every request at once with a valid reply whose idx keeps growing, so
 * each reply really updates the session.
 */
function instantTransport(): Transport {
  let idx = 10_000
  return {
    request: (req) => {
      idx++
      const ts = hlcFrom(REPLY_MS + idx, 0)
      if (req.url.endsWith('/v1/topology')) return Promise.resolve({ status: 200, body: topology })
      if (req.method === 'GET') {
        return Promise.resolve({
          status: 200,
          body: {
            found: true,
            value: 'v'.repeat(62),
            ts,
            dc: idx % REGIONS,
            idx,
            epoch: EPOCH,
            region: 0,
            replica: 1,
            waitedMs: 0,
          },
        })
      }
      return Promise.resolve({ status: 200, body: { ts, dc: 0, idx, epoch: EPOCH, region: 0 } })
    },
  }
}

/** Runs the bookkeeping micro-benchmark. */
export async function runBookkeeping(quick: boolean): Promise<BookkeepingRow[]> {
  const bench = new Bench({ time: quick ? 150 : 1500, warmupTime: quick ? 50 : 300 })
  const value = 'v'.repeat(62)
  const clients: Causeway[] = []
  for (const touched of [4, 1000]) {
    const keys = keysOnDistinctPartitions(touched)
    const session = sessionTouching(keys)
    let i = 0
    let idx = 5000
    const next = (): string => keys[i++ % keys.length]!
    bench.add(`read bookkeeping|${touched}`, () => {
      const p = partitionOf(next(), PARTITIONS)
      const need = session.readNeed(p, 'session')
      if (need) formatReadNeed(need)
      session.observeRead(p, {
        dc: 1,
        idx: ++idx,
        ts: hlcFrom(REPLY_MS, idx & 0xffff),
        epoch: EPOCH,
      })
    })
    bench.add(`write bookkeeping|${touched}`, () => {
      const p = partitionOf(next(), PARTITIONS)
      session.writeDependency('session')
      session.observeWrite(p, {
        dc: 0,
        idx: ++idx,
        ts: hlcFrom(REPLY_MS, idx & 0xffff),
        epoch: EPOCH,
      })
    })
    bench.add(`serialise session|${touched}`, () => {
      JSON.stringify(session)
    })
    // The whole call through the real client: its session starts with the same rows.
    const db = await connect({
      url: topology.regions[0]!.url,
      transport: instantTransport(),
      session: sessionTouching(keys),
    })
    clients.push(db)
    bench.add(`client get (no-op transport)|${touched}`, async () => {
      await db.get(next())
    })
    bench.add(`client put (no-op transport)|${touched}`, async () => {
      await db.put(next(), value)
    })
  }
  await bench.run()
  await Promise.all(clients.map((db) => db.close()))
  return bench.tasks.map((task) => {
    const [name, touched] = task.name.split('|') as [string, string]
    const r = task.result
    if (r.state !== 'completed') throw new Error(`bookkeeping task ${task.name} ended ${r.state}`)
    return {
      case: name,
      touched: Number(touched),
      medianNs: Math.round(r.latency.p50 * 1e6),
      nsPerCall: Math.round(r.latency.mean * 1e6),
      p99Ns: Math.round(r.latency.p99 * 1e6),
      samples: r.latency.samplesCount,
    }
  })
}

export const bookkeepingSuite: Suite<BookkeepingRow[]> = {
  name: 'bookkeeping',
  title: 'SDK cost per call (session bookkeeping and request encoding)',
  estimateS: (quick) => (quick ? 6 : 25),
  async measure(ctx) {
    ctx.log('tinybench: session bookkeeping and whole client calls, 4 and 1,000 partitions touched')
    return runBookkeeping(ctx.quick)
  },
  report(rows) {
    const byCase = new Map<string, Map<number, BookkeepingRow>>()
    for (const row of rows) {
      if (!byCase.has(row.case)) byCase.set(row.case, new Map())
      byCase.get(row.case)!.set(row.touched, row)
    }
    const us = (ns: number | undefined): string => (ns === undefined ? '–' : (ns / 1000).toFixed(2))
    const markdown = [
      'What the SDK itself adds to a call, on top of the network (Node, one core; tinybench, median and 99th percentile per call). "Touched" is the',
      'number of partitions the session has rows for; a call only reads and writes its own',
      "partition's row, so the cost must not grow with it (serialising the whole session does).",
      '',
      table(
        ['case', 'median µs, 4 touched', 'p99 µs, 4', 'median µs, 1,000 touched', 'p99 µs, 1,000'],
        [...byCase.entries()].map(([name, m]) => [
          name,
          us(m.get(4)?.medianNs),
          us(m.get(4)?.p99Ns),
          us(m.get(1000)?.medianNs),
          us(m.get(1000)?.p99Ns),
        ]),
      ),
    ].join('\n')
    return { markdown, charts: [] }
  },
}
