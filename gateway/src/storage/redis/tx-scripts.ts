/**
 * The Lua scripts of transactions (Nami) on a Redis partition replica: the leader's commit of a
 * partition's share of transactions, the follower-side apply of `commit` log entries (a Redis
 * leader also takes them in the compliance suite), reads at a snapshot, and collection behind the
 * floor. The layout (`key-layout.ts`):
 *
 * - `<prefix>tx` (hash): `ctid` (highest tid committed here), `floor`, `rel:<d>` (the highest idx
 *   of region `d`'s commit entries here a relay made visible).
 * - `<prefix>x:<key>` (sorted set): the versions of a transactional key, score its tid, member
 *   `<tid:16><ts:16><dc:2 hex>` then `=` and the value, or `-` for a tombstone.
 * - `<prefix>g` (sorted set): keys that have superseded versions, score the newest tid that
 *   superseded one (`GT`): what a collection at a floor at least that may trim.
 * - `<prefix>c` (sorted set): `<tid>:<idx>` of each commit entry, score its tid (a replay finds
 *   the entry of a tid committed before).
 * - `<prefix>tx:rl:<d>` (sorted set): `<idx>:<tid>`, score the idx of region `d`'s commit entry a
 *   relay of tid made visible (what a session that has seen it must read at).
 * - a commit entry in `<prefix>log:<d>`: fields `k` (first key), `ts`, `at`, `c` (tid), `w` (the
 *   writes' text), `r` (`<region>:<tid>:<idx>` of a relay).
 *
 * Every script keeps a version only when it beats the key's newest by `(ts, dc)`, so the newest
 * version at most a tid is the winner at that tid, as in the LevelDB replica.
 */
import { LuaScript } from './lua-script.js'
import { SV_LUA } from './sv-lua.js'
import { LEADER_CHECK_LUA } from './epoch-scripts.js'

const COMMON_LUA = `
local function version_wins(ts, dc, cur_ts, cur_dc)
  return ts > cur_ts or (ts == cur_ts and dc > cur_dc)
end
-- The newest version of a key's set: ts and dc, or nil.
local function newest(xkey)
  local top = redis.call('ZREVRANGE', xkey, 0, 0)
  if not top[1] then return nil end
  return string.sub(top[1], 17, 32), tonumber(string.sub(top[1], 33, 34), 16), tonumber(string.sub(top[1], 1, 16))
end
-- Makes (tid, ts, dc, value or nil) a version of xkey if it wins; notes superseded ones in g.
local function put_version(xkey, gkey, enc, tid, ts, dc, value)
  local cur_ts, cur_dc = newest(xkey)
  if cur_ts and not version_wins(ts, dc, cur_ts, cur_dc) then return end
  local member = string.format('%016d', tid) .. ts .. string.format('%02x', dc)
  if value then member = member .. '=' .. value else member = member .. '-' end
  redis.call('ZADD', xkey, tid, member)
  if cur_ts then redis.call('ZADD', gkey, 'GT', tid, enc) end
end
${SV_LUA}`

/**
 * The leader's commits, in tid order. KEYS: meta, sv, log(region), tx, c, g, then the version set of every write of every commit, in
 * order. ARGV: region, regions, now ('' for TIME), n, then per commit: tid, ts, relay ('' or
 * `region:tid:idx`), writes text, the encoded keys of its writes joined by US, the number of its
 * writes; last, the writer's leader token (`LEADER_CHECK_LUA`: '' checks nothing). A commit whose
 * tid is at most `ctid` is not applied again: its idx is looked up. The new ones are fenced like
 * any leader write: refused whole (`CW_NOT_LEADER`, `CW_CEILING` for the last new index) before
 * the first is written.
 * Reply: per commit idx and at, then sv[0..regions-1].
 */
export const COMMIT_SCRIPT = new LuaScript(`#!lua
${COMMON_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local n = tonumber(ARGV[4])
local pc
if ARGV[3] ~= '' then pc = tonumber(ARGV[3]) else
  local now = redis.call('TIME')
  pc = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
local at = string.format('%d', pc)
local ctid = tonumber(redis.call('HGET', KEYS[4], 'ctid') or '0')
local idx = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
local hlc = redis.call('HGET', KEYS[1], 'hlc') or '0000000000000000'
-- Checked whole before the first write (a script error does not roll back).
local a = 5
local plan = {}
for i = 1, n do
  local tid = tonumber(ARGV[a])
  local count = tonumber(ARGV[a + 5])
  local ok, writes = pcall(cjson.decode, ARGV[a + 3])
  if not ok or type(writes) ~= 'table' or #writes ~= count or count < 1 then
    return redis.error_reply('CW_BAD_COMMIT malformed writes')
  end
  plan[i] = { tid = tid, ts = ARGV[a + 1], relay = ARGV[a + 2], text = ARGV[a + 3], writes = writes, keys = ARGV[a + 4] }
  a = a + 6
end
do
  local fresh = 0
  for i = 1, n do if plan[i].tid > ctid then fresh = fresh + 1 end end
  if fresh > 0 then
    local idx = idx + fresh
    local leader_token = ARGV[a]
${LEADER_CHECK_LUA}
  end
end
local reply = {}
local k = 7
for i = 1, n do
  local c = plan[i]
  if c.tid <= ctid then
    local found = redis.call('ZRANGEBYSCORE', KEYS[5], c.tid, c.tid)
    if not found[1] then return redis.error_reply('CW_BAD_COMMIT tid ' .. c.tid .. ' is at or below the committed tid but unknown') end
    reply[#reply + 1] = string.sub(found[1], string.find(found[1], ':', 1, true) + 1)
    reply[#reply + 1] = '0'
    k = k + #c.writes
  else
    idx = idx + 1
    local fields = { 'k', c.writes[1][1], 'ts', c.ts, 'at', at, 'c', string.format('%d', c.tid), 'w', c.text }
    local dc = region
    if c.relay ~= '' then
      fields[#fields + 1] = 'r'
      fields[#fields + 1] = c.relay
      local from, ftid, fidx = string.match(c.relay, '^(%d+):(%d+):(%d+)$')
      dc = tonumber(from)
      local rel = tonumber(redis.call('HGET', KEYS[4], 'rel:' .. from) or '0')
      if tonumber(fidx) > rel then redis.call('HSET', KEYS[4], 'rel:' .. from, fidx) end
      redis.call('ZADD', KEYS[4] .. ':rl:' .. from, tonumber(fidx), fidx .. ':' .. string.format('%d', c.tid))
    end
    redis.call('XADD', KEYS[3], string.format('%d-0', idx), unpack(fields))
    local encs = {}
    for e in string.gmatch(c.keys, '[^\\31]+') do encs[#encs + 1] = e end
    for j, w in ipairs(c.writes) do
      put_version(KEYS[k], KEYS[6], encs[j], c.tid, c.ts, dc, w[2])
      k = k + 1
    end
    redis.call('ZADD', KEYS[5], c.tid, string.format('%d', c.tid) .. ':' .. string.format('%d', idx))
    ctid = c.tid
    if c.ts > hlc then hlc = c.ts end
    reply[#reply + 1] = string.format('%d', idx)
    reply[#reply + 1] = at
  end
end
redis.call('HSET', KEYS[4], 'ctid', string.format('%d', ctid))
redis.call('HSET', KEYS[2], ARGV[1], string.format('%d', idx))
redis.call('HSET', KEYS[1], 'hlc', hlc)
-- Published (sv-lua.ts): other gateways, and those of the followers once they apply it, learn
-- the advance from the message.
for _, v in ipairs(sv_publish(KEYS[2], regions)) do reply[#reply + 1] = v end
return reply
`)

/**
 * Versions of keys at a snapshot, with the floor and `sv`, atomically; runs on replicas.
 * KEYS: tx, sv, then each key's version set. ARGV: regions, tid.
 * Reply: floor, ctid, sv[0..regions-1], then per key its member ('' when none at that tid).
 */
export const READ_AS_OF_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local t = redis.call('HMGET', KEYS[1], 'floor', 'ctid')
local reply = { t[1] or '0', t[2] or '0' }
for d = 0, regions - 1 do reply[#reply + 1] = redis.call('HGET', KEYS[2], tostring(d)) or '0' end
for i = 3, #KEYS do
  local v = redis.call('ZREVRANGEBYSCORE', KEYS[i], ARGV[2], '-inf', 'LIMIT', 0, 1)
  reply[#reply + 1] = v[1] or ''
end
return reply
`)

/**
 * Raises the floor and trims what only snapshots below it could see; bounded. KEYS: tx, g, c.
 * ARGV: floor, key prefix of the version sets (`<prefix>x:`), most keys to trim.
 * Reply: the floor now, then '1' when more keys may wait for a trim.
 */
export const COLLECT_SCRIPT = new LuaScript(`#!lua
local floor = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'floor') or '0')
if floor > cur then redis.call('HSET', KEYS[1], 'floor', ARGV[1]) else floor = cur end
local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', floor, 'LIMIT', 0, tonumber(ARGV[3]))
for _, enc in ipairs(keys) do
  local xkey = ARGV[2] .. enc
  local keep = redis.call('ZREVRANGEBYSCORE', xkey, floor, '-inf', 'LIMIT', 0, 1)
  if keep[1] then
    local tid = tonumber(string.sub(keep[1], 1, 16))
    redis.call('ZREMRANGEBYSCORE', xkey, '-inf', '(' .. tid)
  end
  redis.call('ZREM', KEYS[2], enc)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. floor)
local more = '0'
if #keys == tonumber(ARGV[3]) then more = '1' end
return { string.format('%d', floor), more }
`)

/**
 * What `visibleAt` needs; runs on replicas. KEYS: tx, log(region), then per other region its log
 * and its relay index (`rl`). ARGV: regions, region, need[0..regions-1].
 * Reply: ctid, then for this region the tid of the newest commit entry at most need[region]
 * ('' when the log holds none, '?' when it was not found within the scan), then per other region
 * '' (nothing to wait for), 'wait' (a commit entry it covers is not visible yet) or the tid
 * from which on what it covers is visible.
 *
 * Another region d's commit entries it covers are read from the newest one a relay of this
 * region made visible (`rl:d`, at most need[d]) up to need[d]. A plain one there is not relayed
 * yet. One that is itself a relay is never relayed here (a region ships only its own
 * transactions), so it is not waited for as d's (issue 22.7): a relay of this region's own
 * transaction is visible at its tid here; a relay of a third region's once this region relayed
 * that region's commit entry (its `rl`).
 */
export const VISIBLE_SCRIPT = new LuaScript(`#!lua flags=no-writes
local regions = tonumber(ARGV[1])
local region = tonumber(ARGV[2])
local reply = { redis.call('HGET', KEYS[1], 'ctid') or '0' }
local ctid = tonumber(reply[1])
local function need(d) return tonumber(ARGV[3 + d]) end
-- This region: the newest commit entry at or below need, among the last 256 entries there.
local own = ''
if need(region) > 0 then
  own = '?'
  local upto = need(region) .. '-0'
  -- Pages of 16 entries, at most 256 entries back.
  for page = 1, 16 do
    local rows = redis.call('XREVRANGE', KEYS[2], upto, '-', 'COUNT', 16)
    for _, row in ipairs(rows) do
      local f = row[2]
      for i = 1, #f, 2 do
        if f[i] == 'c' then own = f[i + 1]; break end
      end
      if own ~= '?' then break end
    end
    if own ~= '?' then break end
    if #rows < 16 then own = ''; break end
    upto = '(' .. rows[#rows][1]
  end
end
reply[#reply + 1] = own
local k = 3
for d = 0, regions - 1 do
  if d ~= region then
    local n = need(d)
    local out = ''
    if n > 0 then
      local tid = -1
      local from = 0
      local r = redis.call('ZREVRANGEBYSCORE', KEYS[k + 1], n, '-inf', 'LIMIT', 0, 1)
      if r[1] then
        local colon = string.find(r[1], ':', 1, true)
        from = tonumber(string.sub(r[1], 1, colon - 1))
        tid = tonumber(string.sub(r[1], colon + 1))
      end
      if n > from then
        local rows = redis.call('XRANGE', KEYS[k], '(' .. from .. '-0', n .. '-0')
        for _, row in ipairs(rows) do
          local f = row[2]
          local commit, relay = false, nil
          for i = 1, #f, 2 do
            if f[i] == 'c' then commit = true elseif f[i] == 'r' then relay = f[i + 1] end
          end
          if commit then
            if not relay then out = 'wait'; break end
            local rfrom, rtid, ridx = string.match(relay, '^(%d+):(%d+):(%d+)$')
            if tonumber(rfrom) == region then
              if tonumber(rtid) > tid then tid = tonumber(rtid) end
            else
              local rel = tonumber(redis.call('HGET', KEYS[1], 'rel:' .. rfrom) or '0')
              if tonumber(ridx) > rel then out = 'wait'; break end
              local seen = redis.call('ZREVRANGEBYSCORE', KEYS[1] .. ':rl:' .. rfrom, ridx, '-inf', 'LIMIT', 0, 1)
              local t = ctid
              if seen[1] then t = tonumber(string.sub(seen[1], string.find(seen[1], ':', 1, true) + 1)) end
              if t > tid then tid = t end
            end
          end
        end
      end
      if out ~= 'wait' and tid >= 0 then out = string.format('%d', tid) end
    end
    reply[#reply + 1] = out
    k = k + 2
  end
end
return reply
`)

/**
 * Shipped or replicated `commit` entries, one origin's consecutive run, applied like the ingest
 * script applies entries (gaps stop, entries at or below `sv[origin]` are skipped): this region's
 * own commit entries (at a follower) make versions; another region's are only logged.
 * KEYS: meta, sv, log(origin), tx, c, g, then the version set of every write of every entry (own
 * origin only; none for another region's). ARGV: region, regions, origin, n, then per entry: idx,
 * key, ts, at, tid, relay ('' or `region:tid:idx`), writes text, encoded keys joined by US, the
 * number of its writes. Reply: sv[0..regions-1].
 */
export const INGEST_COMMITS_SCRIPT = new LuaScript(`#!lua
${COMMON_LUA}
local region = tonumber(ARGV[1])
local regions = tonumber(ARGV[2])
local origin = ARGV[3]
local own = tonumber(origin) == region
local n = tonumber(ARGV[4])
local cur = tonumber(redis.call('HGET', KEYS[2], origin) or '0')
local before = cur
local hlc = redis.call('HGET', KEYS[1], 'hlc') or '0000000000000000'
local ctid = tonumber(redis.call('HGET', KEYS[4], 'ctid') or '0')
local a = 5
local k = 7
for i = 1, n do
  local idx = tonumber(ARGV[a])
  local count = tonumber(ARGV[a + 8])
  if idx > cur + 1 then break end
  if idx == cur + 1 then
    local fields = { 'k', ARGV[a + 1], 'ts', ARGV[a + 2], 'at', ARGV[a + 3], 'c', ARGV[a + 4], 'w', ARGV[a + 6] }
    if ARGV[a + 5] ~= '' then fields[#fields + 1] = 'r'; fields[#fields + 1] = ARGV[a + 5] end
    redis.call('XADD', KEYS[3], string.format('%d-0', idx), unpack(fields))
    if own then
      local tid = tonumber(ARGV[a + 4])
      local ok, writes = pcall(cjson.decode, ARGV[a + 6])
      if ok and type(writes) == 'table' then
        local dc = region
        if ARGV[a + 5] ~= '' then
          local from, _, fidx = string.match(ARGV[a + 5], '^(%d+):(%d+):(%d+)$')
          dc = tonumber(from)
          local rel = tonumber(redis.call('HGET', KEYS[4], 'rel:' .. from) or '0')
          if tonumber(fidx) > rel then redis.call('HSET', KEYS[4], 'rel:' .. from, fidx) end
          redis.call('ZADD', KEYS[4] .. ':rl:' .. from, tonumber(fidx), fidx .. ':' .. ARGV[a + 4])
        end
        local encs = {}
        for e in string.gmatch(ARGV[a + 7], '[^\\31]+') do encs[#encs + 1] = e end
        for j, w in ipairs(writes) do
          if KEYS[k + j - 1] then put_version(KEYS[k + j - 1], KEYS[6], encs[j], tid, ARGV[a + 2], dc, w[2]) end
        end
        redis.call('ZADD', KEYS[5], tid, ARGV[a + 4] .. ':' .. string.format('%d', idx))
        if tid > ctid then ctid = tid end
      end
      k = k + count
    end
    if ARGV[a + 2] > hlc then hlc = ARGV[a + 2] end
    cur = idx
  elseif own then
    k = k + count
  end
  a = a + 9
end
redis.call('HSET', KEYS[2], origin, string.format('%d', cur))
redis.call('HSET', KEYS[4], 'ctid', string.format('%d', ctid))
redis.call('HSET', KEYS[1], 'hlc', hlc)
if cur > before then return sv_publish(KEYS[2], regions) end
return sv_list(KEYS[2], regions)
`)
