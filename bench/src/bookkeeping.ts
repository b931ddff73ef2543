/**
 * Cost per call of the SDK's session bookkeeping (what a get/put adds on the client before and
 * after the network): partition lookup, building the read vector and its header, the write
 * dependency, and recording the reply. Measured with 4 and with 1,000 partitions touched.
 */
import { Bench } from 'tinybench'
import { Session, formatReadNeed, hlcFrom, partitionOf } from '@causeway/core'

export interface BookkeepingRow {
  case: string
  touched: number
  nsPerCall: number
  p99Ns: number
  samples: number
}

const REGIONS = 3
const PARTITIONS = 1024

function sessionTouching(touched: number): { session: Session; keys: string[] } {
  const session = new Session({ cluster: 'bench', regions: REGIONS, partitions: PARTITIONS })
  const keys: string[] = []
  const seen = new Set<number>()
  for (let i = 0; seen.size < touched; i++) {
    const key = `user:${i}:profile`
    const p = partitionOf(key, PARTITIONS)
    if (seen.has(p)) continue
    seen.add(p)
    keys.push(key)
    session.observeWrite(p, { dc: i % REGIONS, idx: 1000 + i, ts: hlcFrom(1_700_000_000_000 + i, 0), epoch: 1 })
    session.observeRead(p, { dc: (i + 1) % REGIONS, idx: 2000 + i, ts: hlcFrom(1_700_000_000_000 + i, 1), epoch: 1 })
  }
  return { session, keys }
}

/** Runs the bookkeeping micro-benchmark; `quick` shortens each task. */
export async function runBookkeeping(quick: boolean): Promise<BookkeepingRow[]> {
  const bench = new Bench({ time: quick ? 200 : 1500, warmupTime: quick ? 50 : 300 })
  const sessions = new Map<number, ReturnType<typeof sessionTouching>>()
  for (const touched of [4, 1000]) {
    const s = sessionTouching(touched)
    sessions.set(touched, s)
    let i = 0
    let idx = 5000
    bench.add(`read bookkeeping|${touched}`, () => {
      const key = s.keys[i++ % s.keys.length]!
      const p = partitionOf(key, PARTITIONS)
      const need = s.session.readNeed(p, 'session')
      if (need) formatReadNeed(need)
      s.session.observeRead(p, { dc: 1, idx: ++idx, ts: hlcFrom(1_800_000_000_000, idx & 0xffff), epoch: 1 })
    })
    bench.add(`write bookkeeping|${touched}`, () => {
      const key = s.keys[i++ % s.keys.length]!
      const p = partitionOf(key, PARTITIONS)
      s.session.writeDependency('session')
      s.session.observeWrite(p, { dc: 0, idx: ++idx, ts: hlcFrom(1_800_000_000_000, idx & 0xffff), epoch: 1 })
    })
    bench.add(`serialise session|${touched}`, () => {
      JSON.stringify(s.session)
    })
  }
  await bench.run()
  return bench.tasks.map((task) => {
    const [name, touched] = task.name.split('|') as [string, string]
    const r = task.result
    if (r.state !== 'completed') throw new Error(`bookkeeping task ${task.name} ended ${r.state}`)
    return {
      case: name,
      touched: Number(touched),
      nsPerCall: Math.round(r.latency.mean * 1e6),
      p99Ns: Math.round(r.latency.p99 * 1e6),
      samples: r.latency.samplesCount,
    }
  })
}
