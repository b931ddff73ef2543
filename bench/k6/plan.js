/* global __ENV, open */
// The harness's k6 script (`npm run bench`): runs the scenarios of a plan file one after the
// other, each a constant number of VUs for a fixed time, and writes k6's summary, with one
// sub-metric per scenario, to a JSON file. You normally do not run it by hand; see
// causeway-mixed.js for a script to point at your own cluster.
//   PLAN      path of the plan: { scenarios: [{ name, exec, vus, durationS, startS, env }] }
//   SUMMARY   path of the summary JSON to write
import { raw } from './lib/raw.js'
import { mixed } from './lib/workload.js'

const plan = JSON.parse(open(__ENV.PLAN))

const scenarios = {}
const thresholds = {}
for (const s of plan.scenarios) {
  scenarios[s.name] = {
    executor: 'constant-vus',
    exec: s.exec,
    vus: s.vus,
    duration: `${s.durationS}s`,
    startTime: `${s.startS}s`,
    gracefulStop: '1s',
    env: { ...s.env, MEASURE_S: String(s.durationS) },
  }
  // A threshold on a tagged sub-metric makes k6 report that sub-metric in the summary.
  const only = `scenario:${s.name}`
  thresholds[`causeway_op_duration{${only}}`] = ['max>=0']
  thresholds[`causeway_op_duration{${only},op:get}`] = ['max>=0']
  thresholds[`causeway_op_duration{${only},op:put}`] = ['max>=0']
  thresholds[`causeway_ops{${only}}`] = ['count>=0']
  thresholds[`causeway_op_failed{${only}}`] = ['rate>=0']
  thresholds[`causeway_read_wait{${only}}`] = ['max>=0']
  thresholds[`causeway_write_wait{${only}}`] = ['max>=0']
  thresholds[`causeway_read_retries{${only}}`] = ['count>=0']
  thresholds[`causeway_errors{${only}}`] = ['count>=0']
}

export const options = {
  scenarios,
  thresholds,
  // Not the 'url' tag: every key is its own URL, and k6 keeps a time series per tag set (with
  // thousands of keys over hundreds of scenarios that grows to gigabytes).
  systemTags: ['status', 'method', 'name', 'scenario', 'expected_response', 'error', 'error_code'],
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max', 'count'],
}

export { mixed, raw }

export function handleSummary(data) {
  return { [__ENV.SUMMARY]: JSON.stringify(data) }
}
