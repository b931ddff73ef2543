/**
 * How a Redis replica's `sv` reaches the gateways that watch its server: every script that
 * advances it ends with {@link SV_LUA}'s `sv_publish`, which reads the new `sv` for the script's
 * reply and publishes it, as `sv[0],sv[1],...`, on the `sv` key's own name (a pub/sub channel as
 * well as a key). Redis replicates a script's `PUBLISH` with its effects, inside the same
 * MULTI/EXEC, so a follower's server publishes it too, once it has applied them: a gateway learns
 * each advance of each replica from one message, without reading `sv` back (which was one round
 * trip per replica per write).
 */

/** `sv_list(svkey, regions)` and `sv_publish(svkey, regions)`; both return `sv` as strings. */
export const SV_LUA = `
local function sv_list(svkey, regions)
  local out = {}
  for d = 0, regions - 1 do out[#out + 1] = redis.call('HGET', svkey, tostring(d)) or '0' end
  return out
end
local function sv_publish(svkey, regions)
  local sv = sv_list(svkey, regions)
  redis.call('PUBLISH', svkey, table.concat(sv, ','))
  return sv
end
`

const INDEX = /^(0|[1-9][0-9]{0,15})$/

/** A published `sv` of `regions` entries, or undefined when the message is not one. */
export function parsePublishedSv(message: string, regions: number): number[] | undefined {
  const parts = message.split(',')
  if (parts.length !== regions || !parts.every((p) => INDEX.test(p))) return undefined
  const sv = parts.map(Number)
  return sv.every(Number.isSafeInteger) ? sv : undefined
}
