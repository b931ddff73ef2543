/* global __ENV */
// Load-test a Causeway cluster with k6: half the virtual users use session guarantees, half use
// eventual consistency, side by side, so you see what the guarantees cost on your cluster.
//
//   npm run bench -- bundle                    # builds bench/dist/causeway-k6.js (the SDK for k6)
//   k6 run -e CAUSEWAY_URL=http://127.0.0.1:7070 bench/k6/causeway-mixed.js
//
// Every setting of lib/workload.js can be given with -e (WRITE_RATIO, REMOTE_RATIO, KEYS, ...),
// and these set the shape of the run:
//   VUS        virtual users per scenario  [10]
//   DURATION   length of the run           [30s]
import { mixed } from './lib/workload.js'

const vus = Number(__ENV.VUS || 10)
const duration = __ENV.DURATION || '30s'

export const options = {
  scenarios: {
    session: {
      executor: 'constant-vus',
      exec: 'run',
      vus,
      duration,
      env: { READ_LEVEL: 'session', WRITE_LEVEL: 'session' },
    },
    eventual: {
      executor: 'constant-vus',
      exec: 'run',
      vus,
      duration,
      env: { READ_LEVEL: 'eventual', WRITE_LEVEL: 'eventual' },
    },
  },
  thresholds: {
    // Fewer than 1% of calls may fail, whatever the level.
    causeway_op_failed: ['rate<0.01'],
    // Latency budgets per operation and level (tags set by the workload).
    'causeway_op_duration{op:get,read_level:session}': ['p(95)<250'],
    'causeway_op_duration{op:put,write_level:session}': ['p(95)<250'],
    'causeway_op_duration{op:get,read_level:eventual}': ['p(95)<250'],
    'causeway_op_duration{op:put,write_level:eventual}': ['p(95)<250'],
    // A read that had to wait for its session shows here.
    'causeway_read_wait{read_level:session}': ['p(99)<1000'],
  },
  summaryTrendStats: ['avg', 'med', 'p(95)', 'p(99)', 'max'],
  // Every key is its own URL: leave the 'url' tag out (the transport tags requests with the
  // route as 'name'), or k6 keeps a time series per key and its memory grows with the key space.
  systemTags: ['status', 'method', 'name', 'scenario', 'expected_response', 'error', 'error_code'],
}

export async function run() {
  await mixed()
}
