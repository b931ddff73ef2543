/* global __ENV */
// Plain k6 HTTP, no SDK: the baselines next to the SDK workload. Each iteration sends one GET
// or PUT of RAW_URL with '{key}' replaced by a random key (WRITE_RATIO of them PUTs, with a
// VALUE_BYTES JSON body), recorded in the same causeway_* metrics as lib/workload.js.
//   RAW_URL   e.g. http://127.0.0.1:7070/v1/kv/{key}?level=eventual, or a do-nothing route
import exec from 'k6/execution'
import http from 'k6/http'
import { config, errors, keyAt, opDuration, opFailed, ops, valueOf } from './workload.js'

export async function raw() {
  const cfg = config()
  const template = __ENV.RAW_URL
  if (!template) throw new Error('RAW_URL is required by the raw workload')
  const key = keyAt(Math.floor(Math.random() * cfg.keys), cfg.keyBytes)
  const url = template.replace('{key}', key)
  const isWrite = Math.random() < cfg.writeRatio
  const tags = {
    op: isWrite ? 'put' : 'get',
    read_level: 'raw',
    write_level: 'raw',
    remote: 'false',
  }
  const params = { tags: { name: template, op: tags.op }, headers: {} }
  let res
  if (isWrite) {
    params.headers['content-type'] = 'application/json'
    const body = JSON.stringify({ value: valueOf(cfg.valueBytes, exec.vu.iterationInScenario) })
    res = await http.asyncRequest('PUT', url, body, params)
  } else {
    res = await http.asyncRequest('GET', url, null, params)
  }
  const now = Date.now() - exec.scenario.startTime
  if (now < cfg.warmupMs || (cfg.measureMs > 0 && now > cfg.measureMs)) return
  const failed = res.status < 200 || res.status >= 300
  if (failed) errors.add(1, { ...tags, code: String(res.status) })
  opDuration.add(res.timings.duration, tags)
  ops.add(1, tags)
  opFailed.add(failed, tags)
}
