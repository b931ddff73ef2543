/**
 * The `dvv` suite's baseline server, run as a child process: a {@link BaselineCluster} of
 * `--regions` regions in memory, one Fastify server per region (the gateway's framework), so the
 * baseline is measured over the same HTTP and client code as Causeway.
 *
 *   node baseline-server.js --mode vv|dvv --regions 3 --delay-ms 20
 *   prints `region <d> <url>` per region, then `ready`; stops on SIGTERM.
 *
 *   GET /kv/:key  -> {"values":[<json>...],"context":"<base64url>"}
 *   PUT /kv/:key  {"value":<json>}, headers x-client, x-seq, x-context (absent: blind) -> {}
 */
import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import { BaselineCluster, type ClockMode } from './baseline-store.js'

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'vv' },
    regions: { type: 'string', default: '3' },
    'delay-ms': { type: 'string', default: '0' },
  },
})
const mode = values.mode as ClockMode
if (mode !== 'vv' && mode !== 'dvv') throw new Error(`--mode must be vv or dvv, not ${mode}`)
const regions = Number(values.regions)
const cluster = new BaselineCluster(regions, mode, Number(values['delay-ms']))

const apps = cluster.regions.map((store) => {
  const app = Fastify({ logger: false, bodyLimit: 4 * 1024 * 1024 })
  app.get<{ Params: { key: string } }>('/kv/:key', async (request, reply) => {
    const read = store.read(request.params.key)
    const context = Buffer.from(read.context).toString('base64url')
    // Stored as JSON text: spliced in, as the gateway does.
    const body = `{"values":[${read.values.join(',')}],"context":"${context}"}`
    return reply.type('application/json; charset=utf-8').send(body)
  })
  app.put<{ Params: { key: string }; Body: { value: unknown } }>('/kv/:key', async (request) => {
    const header = request.headers['x-context']
    cluster.write(store.region, request.params.key, {
      value: JSON.stringify(request.body.value),
      context: typeof header === 'string' ? Buffer.from(header, 'base64url') : undefined,
      client: Number(request.headers['x-client']),
      seq: Number(request.headers['x-seq']),
    })
    return {}
  })
  return app
})

for (const [d, app] of apps.entries()) {
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  process.stdout.write(`region ${d} ${url}\n`)
}
process.stdout.write('ready\n')

const stop = (): void => {
  cluster.close()
  void Promise.all(apps.map((app) => app.close())).then(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
