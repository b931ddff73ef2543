/**
 * The do-nothing baseline: a Fastify server (the gateway's framework and version) whose routes
 * answer at once, so the report can say how close the gateway gets to what Node + Fastify + k6
 * allow on this machine. Run as a child process: prints its URL, stops on SIGTERM.
 *   GET /noop/:key  -> {"found":false}
 *   PUT /noop/:key  -> {"ok":true}  (the JSON body is parsed, as the gateway does)
 */
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('/noop/:key', async () => ({ found: false }))
app.put('/noop/:key', async () => ({ ok: true }))

const url = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${url}\n`)
const stop = (): void => {
  void app.close().then(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
