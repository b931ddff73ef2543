/**
 * Raw Redis on this machine: `redis-benchmark` (C client, 64-byte values, no pipelining) and
 * ioredis from Node (the gateway's Redis client) against a redis-server on loopback, so the
 * report can say how close the gateway gets to the store underneath.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { type ChildServer, startChild } from './child-server.js'
import { freePort } from './ports.js'

const run = promisify(execFile)

/** One raw Redis measurement. */
export interface RedisRow {
  client: 'redis-benchmark' | 'ioredis'
  op: 'GET' | 'SET'
  concurrency: number
  opsPerSec: number
  avgMs: number
}

/** A throwaway redis-server on loopback (no persistence). */
export async function startRedis(): Promise<ChildServer & { port: number }> {
  const port = await freePort()
  const server = await startChild(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    (line) => (/Ready to accept connections/.test(line) ? `127.0.0.1:${port}` : undefined),
  )
  return { ...server, port }
}

/** `redis-benchmark -t set,get` with `clients` connections and `requests` requests per test. */
export async function redisBenchmark(
  port: number,
  clients: number,
  requests: number,
  valueBytes: number,
  db = 0,
): Promise<RedisRow[]> {
  const { stdout } = await run(
    'redis-benchmark',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-c',
      String(clients),
      '-n',
      String(requests),
      '-d',
      String(valueBytes),
      '-r',
      '10000',
      '--dbnum',
      String(db),
      '-t',
      'set,get',
      '--csv',
    ],
    { timeout: 300_000 },
  )
  // "test","rps","avg_latency_ms",...
  const rows: RedisRow[] = []
  for (const line of stdout.split('\n')) {
    const cells = line.split(',').map((c) => c.replace(/"/g, ''))
    if (cells[0] !== 'SET' && cells[0] !== 'GET') continue
    rows.push({
      client: 'redis-benchmark',
      op: cells[0],
      concurrency: clients,
      opsPerSec: Number(cells[1]),
      avgMs: Number(cells[2]),
    })
  }
  if (rows.length !== 2) throw new Error(`unexpected redis-benchmark output:\n${stdout}`)
  return rows
}

/**
 * ioredis from this process: `concurrency` loops, each awaiting one command at a time on one
 * shared connection (as the gateway shares one per replica), for `seconds` per operation.
 */
export async function ioredisBenchmark(
  port: number,
  concurrency: number,
  seconds: number,
  valueBytes: number,
  db = 0,
): Promise<RedisRow[]> {
  const redis = new Redis({ host: '127.0.0.1', port, db, lazyConnect: true })
  await redis.connect()
  const value = 'v'.repeat(valueBytes)
  const key = (i: number): string => `key:${String(i % 10_000).padStart(12, '0')}`
  const rows: RedisRow[] = []
  try {
    for (const op of ['SET', 'GET'] as const) {
      let done = 0
      let latency = 0
      const until = performance.now() + seconds * 1000
      await Promise.all(
        Array.from({ length: concurrency }, async (_, w) => {
          for (let i = w; performance.now() < until; i += concurrency) {
            const started = performance.now()
            if (op === 'SET') await redis.set(key(i), value)
            else await redis.get(key(i))
            latency += performance.now() - started
            done++
          }
        }),
      )
      rows.push({
        client: 'ioredis',
        op,
        concurrency,
        opsPerSec: done / seconds,
        avgMs: latency / done,
      })
    }
  } finally {
    redis.disconnect()
  }
  return rows
}
