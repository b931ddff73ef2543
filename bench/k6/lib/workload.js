/* global __ENV */
// The Causeway workload for k6: every virtual user (VU) holds a real SDK client with its own
// session, and each iteration does one get or put, NuKV-style (random key, random replica,
// sometimes in a remote region). Configured by environment variables, per scenario or per run:
//
//   CAUSEWAY_URL    a gateway of the cluster (it tells the SDK every region)  [http://127.0.0.1:7070]
//   READ_LEVEL      eventual | monotonic-reads | read-your-writes | session   [session]
//   WRITE_LEVEL     eventual | monotonic-writes | writes-follow-reads | session [session]
//   WRITE_RATIO     share of operations that are puts, 0..1                   [0.5]
//   REMOTE_RATIO    share of operations sent to another region than home, 0..1 [0]
//   HOME_REGION     'spread' (VU n lives in region n mod regions) or a region name or id [spread]
//   REPLICA         any | leader | follower | random (uniform over the region's replicas) [any]
//   KEYS            size of the key space                                     [10000]
//   KEY_BYTES       key length in bytes                                       [16]
//   VALUE_BYTES     value length in bytes of JSON                             [64]
//   REMOTE_RTT_MS   emulated round trip to a remote region's gateway, in ms   [0]
//   WARMUP_S        seconds after a scenario starts before operations are recorded [0]
//   MEASURE_S       seconds after a scenario starts after which nothing is recorded (0: no end) [0]
//   TIMEOUT_MS      deadline of each call                                     [5000]
//   WITHOUT_HLC     'true' when the cluster runs the "without HLC" ablation: puts also send
//                   their dependency vector (see bench/README.md)              [false]
//
// Metrics (each tagged op=get|put, read_level, write_level, remote=true|false, plus k6's scenario):
//   causeway_op_duration  time on the wire per call, retries and emulated delay included
//   causeway_ops          operations recorded
//   causeway_op_failed    share of calls that threw
//   causeway_errors       failed calls, tagged with the error code
//   causeway_read_wait    how long the serving replica waited for the session (gateway-reported)
//   causeway_read_retries extra attempts the SDK made (SESSION_NOT_AVAILABLE fallbacks)
//   causeway_write_wait   how long a put waited at its leader for its dependencies (gateway-reported;
//                         only a gateway running the "without HLC" ablation reports it)
import exec from 'k6/execution'
import { Counter, Rate, Trend } from 'k6/metrics'
import { connect, k6Transport } from '../../dist/causeway-k6.js'

export const opDuration = new Trend('causeway_op_duration', true)
export const ops = new Counter('causeway_ops')
export const opFailed = new Rate('causeway_op_failed')
export const errors = new Counter('causeway_errors')
export const readWait = new Trend('causeway_read_wait', true)
export const readRetries = new Counter('causeway_read_retries')
export const writeWait = new Trend('causeway_write_wait', true)

function number(name, fallback, min, max) {
  const text = __ENV[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${name} must be a number in ${min}..${max}, not ${JSON.stringify(text)}`)
  }
  return value
}

/** The workload's settings, read from the environment of the current scenario. */
export function config() {
  return {
    url: __ENV.CAUSEWAY_URL || 'http://127.0.0.1:7070',
    read: __ENV.READ_LEVEL || 'session',
    write: __ENV.WRITE_LEVEL || 'session',
    writeRatio: number('WRITE_RATIO', 0.5, 0, 1),
    remoteRatio: number('REMOTE_RATIO', 0, 0, 1),
    home: __ENV.HOME_REGION || 'spread',
    replica: __ENV.REPLICA || 'any',
    keys: number('KEYS', 10000, 1, 1e9),
    keyBytes: number('KEY_BYTES', 16, 4, 512),
    valueBytes: number('VALUE_BYTES', 64, 3, 1 << 20),
    remoteRttMs: number('REMOTE_RTT_MS', 0, 0, 60000),
    warmupMs: number('WARMUP_S', 0, 0, 3600) * 1000,
    measureMs: number('MEASURE_S', 0, 0, 86400) * 1000,
    timeoutMs: number('TIMEOUT_MS', 5000, 1, 60000),
    withoutHlc: __ENV.WITHOUT_HLC === 'true',
  }
}

/** Key `i` of the key space: 'k' and zero-padded digits, exactly `bytes` long. */
export function keyAt(i, bytes) {
  return 'k' + String(i).padStart(bytes - 1, '0')
}

/** A value whose JSON text is exactly `bytes` long (a string: two quotes and the characters). */
export function valueOf(bytes, n) {
  return String(n).padStart(bytes - 2, 'v')
}

// One client per VU and scenario: a VU that moves to the next scenario starts a fresh session.
let state

async function vuState(cfg) {
  const scenario = exec.scenario.name
  if (state && state.scenario === scenario) return state
  if (state) await state.db.close()
  const probe = await connect({ url: cfg.url, transport: k6Transport() })
  const regions = probe.regions
  await probe.close()
  const home =
    cfg.home === 'spread'
      ? regions[(exec.vu.idInTest - 1) % regions.length]
      : regions.find((r) => r.name === cfg.home || String(r.id) === cfg.home)
  if (!home) throw new Error(`HOME ${cfg.home} is not a region of ${cfg.url}`)
  const transport = k6Transport({ remoteDelayMs: cfg.remoteRttMs / 2, home: home.url })
  const db = await connect({
    url: cfg.url,
    region: home.id,
    transport,
    defaults: { read: cfg.read, write: cfg.write, timeoutMs: cfg.timeoutMs },
  })
  if (cfg.withoutHlc) transport.sendWriteDependencies(db)
  state = { scenario, db, transport, home: home.id, writes: 0 }
  return state
}

function pickReplica(choice, replicas) {
  if (choice !== 'random') return choice
  // As in the NuKV experiments: each of the region's replicas is equally likely.
  return Math.random() * replicas < 1 ? 'leader' : 'follower'
}

/** One operation: a put (WRITE_RATIO of the time) or a get, recorded in the causeway_* metrics. */
export async function mixed() {
  const cfg = config()
  const s = await vuState(cfg)
  const { db, transport } = s
  const regions = db.regions.length
  const remote = regions > 1 && cfg.remoteRatio > 0 && Math.random() < cfg.remoteRatio
  let region = s.home
  if (remote) region = (s.home + 1 + Math.floor(Math.random() * (regions - 1))) % regions
  const key = keyAt(Math.floor(Math.random() * cfg.keys), cfg.keyBytes)
  const isWrite = Math.random() < cfg.writeRatio
  const tags = {
    op: isWrite ? 'put' : 'get',
    read_level: cfg.read,
    write_level: cfg.write,
    remote: remote ? 'true' : 'false',
  }
  transport.reset()
  let failed = false
  try {
    if (isWrite) {
      await db.put(key, valueOf(cfg.valueBytes, ++s.writes), { region })
      const waited = transport.writeWaitMs()
      if (waited !== undefined && measuring(cfg)) writeWait.add(waited, tags)
    } else {
      const replica = pickReplica(cfg.replica, db.topology.replicas)
      const r = await db.get(key, { region, replica })
      if (measuring(cfg)) {
        readWait.add(r.waitedMs, tags)
        if (r.attempts > 1) readRetries.add(r.attempts - 1, tags)
      }
    }
  } catch (error) {
    failed = true
    if (measuring(cfg)) errors.add(1, { ...tags, code: (error && error.code) || 'UNKNOWN' })
  }
  if (!measuring(cfg)) return
  opDuration.add(transport.elapsedMs(), tags)
  ops.add(1, tags)
  opFailed.add(failed, tags)
}

// Only the steady part of a scenario counts: after its warm-up, before its end (so calls that
// finish during k6's graceful stop do not inflate the throughput).
function measuring(cfg) {
  const now = Date.now() - exec.scenario.startTime
  return now >= cfg.warmupMs && (cfg.measureMs === 0 || now <= cfg.measureMs)
}
