/* global __ENV */
// Plain k6 HTTP, no SDK: the baselines next to the SDK workload. Each iteration sends one GET
// or PUT of RAW_URL with '{key}' replaced by a random key (WRITE_RATIO of them PUTs, with a
// VALUE_BYTES JSON body), recorded in the same causeway_* metrics as lib/workload.js.
//   RAW_URL     e.g. http://127.0.0.1:7070/v1/kv/{key}?level=eventual, or a do-nothing route
//   SESSION     'true': each VU carries a NuKV session by hand, as the SDK would for the level
//               `session`, without the SDK's own cost: a PUT sends `causeway-dt` (the highest ts
//               the VU has seen), a GET `causeway-after` (the highest idx per region the VU has
//               seen in the key's partition, with its epoch); both replies are read into it
//   PARTITIONS  the cluster's partition count (needed with SESSION)
import exec from 'k6/execution'
import http from 'k6/http'
import { formatReadNeed, partitionOf } from '../../dist/causeway-k6.js'
import { config, errors, keyAt, opDuration, opFailed, ops, valueOf } from './workload.js'

const NO_DT = '0000000000000000'

// One session per VU and scenario, as lib/workload.js has one client.
let session

function vuSession() {
  const scenario = exec.scenario.name
  if (!session || session.scenario !== scenario)
    session = { scenario, dt: NO_DT, need: new Map(), epochs: new Map() }
  return session
}

// What a reply tells the session: the version's (dc, idx) for its partition, its ts and epoch.
function observe(s, p, reply) {
  if (reply.ts !== undefined && reply.ts > s.dt) s.dt = reply.ts
  if (reply.epoch !== undefined) s.epochs.set(p, reply.epoch)
  if (reply.dc === undefined || reply.idx === undefined) return
  const row = s.need.get(p) ?? []
  row[reply.dc] = Math.max(row[reply.dc] ?? 0, reply.idx)
  s.need.set(p, row)
}

export async function raw() {
  const cfg = config()
  const template = __ENV.RAW_URL
  if (!template) throw new Error('RAW_URL is required by the raw workload')
  const withSession = __ENV.SESSION === 'true'
  const partitions = Number(__ENV.PARTITIONS)
  if (withSession && !(partitions >= 1)) throw new Error('SESSION needs PARTITIONS')
  const key = keyAt(Math.floor(Math.random() * cfg.keys), cfg.keyBytes)
  const url = template.replace('{key}', key)
  const isWrite = Math.random() < cfg.writeRatio
  const level = withSession ? 'session' : 'raw'
  const tags = {
    op: isWrite ? 'put' : 'get',
    read_level: level,
    write_level: level,
    remote: 'false',
  }
  const params = { tags: { name: template, op: tags.op }, headers: {} }
  const s = withSession ? vuSession() : undefined
  const p = withSession ? partitionOf(key, partitions) : 0
  let res
  if (isWrite) {
    params.headers['content-type'] = 'application/json'
    if (s && s.dt !== NO_DT) params.headers['causeway-dt'] = s.dt
    const body = JSON.stringify({ value: valueOf(cfg.valueBytes, exec.vu.iterationInScenario) })
    res = await http.asyncRequest('PUT', url, body, params)
  } else {
    const row = s?.need.get(p)
    const after =
      row && formatReadNeed({ need: Array.from(row, (x) => x ?? 0), epoch: s.epochs.get(p) })
    if (after) params.headers['causeway-after'] = after
    res = await http.asyncRequest('GET', url, null, params)
  }
  const failed = res.status < 200 || res.status >= 300
  if (s && !failed) observe(s, p, res.json())
  const now = Date.now() - exec.scenario.startTime
  if (now < cfg.warmupMs || (cfg.measureMs > 0 && now > cfg.measureMs)) return
  if (failed) errors.add(1, { ...tags, code: String(res.status) })
  opDuration.add(res.timings.duration, tags)
  ops.add(1, tags)
  opFailed.add(failed, tags)
}
