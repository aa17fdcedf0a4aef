"""The core's merge rules, server-side (docs/sharing.md): Lua scripts Redis runs atomically, so a
shared record moves only as `autodev_core.scheduler.registry.merge_limit` and `merge_usage` move
it, whoever writes it. `tests/shell/test_sharing_mirror.py` holds a Python transcription of both to
the core's functions.
"""

from __future__ import annotations

from typing import Final

#: The core's merge rule (`autodev_core.scheduler.registry.merge_limit`), server-side and atomic.
#: KEYS[1]: the record's key. ARGV: the observation as JSON ({reset, read, seen, who}, times in
#: epoch milliseconds), now (ms), the channel, the account, the engine, and (`records.merge_args`)
#: the core's bound on a believable read reset after its sighting and the A6 default that stands
#: in for one past it (ms; `registry.believed`: both the held record and the observation are
#: taken so first, docs/sharing.md "Clocks"). Returns 1 when the record changed (and was
#: published), else 0.
MERGE_SCRIPT: Final = """
local obs = cjson.decode(ARGV[1])
local now = tonumber(ARGV[2])
local bound = tonumber(ARGV[6])
local default = tonumber(ARGV[7])
local function believed(r)
  if bound and default and r.read and r.reset - r.seen > bound then
    r.reset = r.seen + default
    r.read = false
  end
  return r
end
obs = believed(obs)
local raw = redis.call('GET', KEYS[1])
local rec = nil
if raw then rec = believed(cjson.decode(raw)) end
if rec and obs.seen >= rec.reset then rec = nil end
local new = nil
if rec == nil then
  new = obs
elseif obs.reset <= rec.seen then
  return 0
elseif obs.read ~= rec.read then
  if obs.read then new = obs else return 0 end
elseif obs.reset ~= rec.reset then
  if obs.reset > rec.reset then new = obs else return 0 end
elseif obs.who ~= rec.who then
  if obs.who < rec.who then new = obs else return 0 end
elseif obs.seen < rec.seen then
  new = obs
else
  return 0
end
local text = cjson.encode(new)
if new.reset > now then
  redis.call('SET', KEYS[1], text, 'PX', string.format('%d', new.reset - now))
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], cjson.encode({account = ARGV[4], engine = ARGV[5],
  reset = new.reset, read = new.read, seen = new.seen, who = new.who, run = new.run}))
return 1
"""


#: The core's usage rule (`autodev_core.scheduler.registry.merge_usage`), server-side
#: and atomic. KEYS[1]: the account's engine's hash. ARGV: the reading as JSON ({util, reset,
#: read, seen, who, threshold}, times in epoch ms), now (ms), the channel, the account, the
#: engine, the window. The newest reading (by `seen`) wins; on a tie the higher utilization, the
#: later reset, a read reset, the smaller name, then the higher threshold. A reading whose
#: window has reset by `now` is dropped, and so is a recorded one (the hash expires with its
#: last window). The reading is stored and published as the writer sent it (cjson would round
#: a float). Returns 1 when the window's record changed (and was published), else 0.
USAGE_SCRIPT: Final = """
local obs = cjson.decode(ARGV[1])
local now = tonumber(ARGV[2])
local window = ARGV[6]
if obs.reset <= now then return 0 end
local function said(r)
  if type(r.threshold) == 'number' then return r.threshold end
  return -1
end
local function rank(r)
  local read = 0
  if r.read then read = 1 end
  return {r.seen, r.util, r.reset, read}
end
local raw = redis.call('HGET', KEYS[1], window)
if raw then
  local ok, rec = pcall(cjson.decode, raw)
  if ok and type(rec) == 'table' and type(rec.reset) == 'number' and rec.reset > now then
    local a, b = rank(rec), rank(obs)
    local newer = nil
    for i = 1, 4 do
      if a[i] ~= b[i] then newer = b[i] > a[i] break end
    end
    if newer == nil and obs.who ~= rec.who then newer = obs.who < rec.who end
    if newer == nil then newer = said(obs) > said(rec) end
    if not newer then return 0 end
  end
end
redis.call('HSET', KEYS[1], window, ARGV[1])
local latest = obs.reset
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ok, r = pcall(cjson.decode, all[i + 1])
  if not ok or type(r) ~= 'table' or type(r.reset) ~= 'number' or r.reset <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif r.reset > latest then
    latest = r.reset
  end
end
redis.call('PEXPIRE', KEYS[1], string.format('%d', latest - now))
redis.call('PUBLISH', ARGV[3], '{"account":' .. cjson.encode(ARGV[4]) .. ',"engine":'
  .. cjson.encode(ARGV[5]) .. ',"window":' .. cjson.encode(window) .. ',"record":'
  .. ARGV[1] .. '}')
return 1
"""
