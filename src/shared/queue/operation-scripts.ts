/**
 * The Lua scripts that make every transition of an operation record atomic. Each runs as one
 * Redis command, so concurrent producers, workers and cancellers see one order of events.
 *
 * Record states: queued → running → verifying → finished, or unknown (runtime started, then the
 * job stalled or was re-delivered). `owner` is the claiming worker's token: only the owner may
 * move a record forward, so a worker that lost its job (stalled, then claimed elsewhere) can
 * neither start the runtime nor overwrite the state.
 */

/**
 * KEYS: op, index. ARGV: digest, now_ms, operation_id, tenant, field, value, … →
 * {created|attached|conflict, state|digest}. Another tenant's record under the id is a conflict
 * (its digest not told: '').
 */
export const CREATE_OR_ATTACH = `
local d = redis.call('HGET', KEYS[1], 'contract_digest')
if d then
  local t = redis.call('HGET', KEYS[1], 'tenant')
  if (t or 'default') ~= ARGV[4] then return {'conflict', ''} end
  -- A settled record keeps its digest as bare hex (compact-record.ts).
  if d == ARGV[1] or 'sha256:' .. d == ARGV[1] then return {'attached', redis.call('HGET', KEYS[1], 'state')} end
  return {'conflict', d}
end
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return {'created', 'queued'}
`;

/**
 * KEYS: op, outbox, events, running. ARGV: owner, worker_json, now_iso, job_id, unknown_event_json,
 * unknown_outbox_json, operation_id, quotas_json ('' = none: {"default": n|null, "tenants": {t: n}}),
 * op key prefix (`<p>:op:`) →
 *   {run, cancel_reason} | {settled, state} | {unknown} | {stale} | {missing} | {over_quota, running}
 * A record whose runtime already started is never run again: it becomes unknown. A claim that
 * would put its tenant over its quota (operations of the tenant running or verifying, counted
 * over the running index in this same script, so two workers never both take the last slot)
 * changes nothing: the caller moves the job back to delayed.
 */
export const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing', ''} end
local s = redis.call('HMGET', KEYS[1], 'state', 'runtime_started', 'job_id', 'cancel_requested', 'tenant')
if s[1] == 'finished' or s[1] == 'unknown' then return {'settled', s[1]} end
if s[3] ~= ARGV[4] then return {'stale', s[3] or ''} end
if s[2] ~= '1' and ARGV[8] ~= '' then
  local q = cjson.decode(ARGV[8])
  local tenant = s[5] or 'default'
  local max = q.tenants[tenant]
  if max == nil then max = q.default end
  if type(max) == 'number' then
    local n = 0
    for _, id in ipairs(redis.call('SMEMBERS', KEYS[4])) do
      if id ~= ARGV[7] then
        local r = redis.call('HMGET', ARGV[9] .. id, 'state', 'tenant')
        if (r[1] == 'running' or r[1] == 'verifying') and (r[2] or 'default') == tenant then n = n + 1 end
      end
    end
    if n >= max then return {'over_quota', tostring(n)} end
  end
end
if s[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'unknown', 'updated_at', ARGV[3],
    'unknown_reason', 'the job was re-delivered after its runtime had started (worker died or lost its lock)')
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '100000', '*', 'event', ARGV[5])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1000000', '*', 'completion', ARGV[6])
  redis.call('SREM', KEYS[4], ARGV[7])
  return {'unknown', ''}
end
redis.call('HSET', KEYS[1], 'state', 'running', 'owner', ARGV[1], 'worker', ARGV[2], 'updated_at', ARGV[3],
  'claimed_at', ARGV[3])
redis.call('SADD', KEYS[4], ARGV[7])
return {'run', s[4] or ''}
`;

/** KEYS: op. ARGV: owner, now_iso → ok | lost | cancelled. The one gate before a runtime starts. */
export const MARK_RUNTIME_STARTED = `
local s = redis.call('HMGET', KEYS[1], 'owner', 'runtime_started', 'cancel_requested', 'state')
if s[1] ~= ARGV[1] or s[2] == '1' or s[4] ~= 'running' then return 'lost' end
if s[3] and s[3] ~= '' then return 'cancelled' end
redis.call('HSET', KEYS[1], 'runtime_started', '1', 'runtime_started_at', ARGV[2], 'updated_at', ARGV[2])
return 'ok'
`;

/** KEYS: op. ARGV: owner, field, value, … → 1 if the caller still owns the record. */
export const UPDATE_IF_OWNER = `
local s = redis.call('HMGET', KEYS[1], 'owner', 'state')
if s[1] ~= ARGV[1] or s[2] == 'finished' or s[2] == 'unknown' then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
`;

/**
 * Settle: the terminal write of an operation, all or nothing: record fields, artifacts, one
 * outbox entry, one event-stream entry (the given event, else a bare `settled` marker); a record no longer
 * running leaves the running index; a record whose artifacts are in the store (`artifacts` pointer)
 * joins the settled index (event retention). KEYS: op, artifacts, outbox, events, running, settled.
 * ARGV: owner ('' = anyone), allowed states (comma list), event_json, outbox_json,
 *       n_record_pairs, operation_id, replace ('1': the record pairs ARE the whole record, the compact
 *       settled form), overflow (the compact form's long fields, compressed: KEYS[7]; '' = none),
 *       record pairs…, artifact pairs… → 1 | 0. KEYS[7]: the record's overflow key.
 */
export const SETTLE = `
local s = redis.call('HMGET', KEYS[1], 'owner', 'state')
if ARGV[1] ~= '' and s[1] ~= ARGV[1] then return 0 end
local ok = false
for st in string.gmatch(ARGV[2], '[^,]+') do if st == s[2] then ok = true end end
if not ok then return 0 end
local n = tonumber(ARGV[5])
-- A new key, so Redis encodes the compact record as a listpack (every value <= 64 bytes).
if ARGV[7] == '1' then redis.call('DEL', KEYS[1]) end
for i = 9, 8 + n * 2, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
if ARGV[8] ~= '' then redis.call('SET', KEYS[7], ARGV[8]) end
for i = 9 + n * 2, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
-- Always one stream entry, so a tail blocked on the stream wakes up at once ('settled' entries carry no event).
if ARGV[3] ~= '' then redis.call('XADD', KEYS[4], 'MAXLEN', '~', '100000', '*', 'event', ARGV[3])
else redis.call('XADD', KEYS[4], 'MAXLEN', '~', '100000', '*', 'settled', 'finished') end
if ARGV[4] ~= '' then redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000000', '*', 'completion', ARGV[4]) end
local st = redis.call('HGET', KEYS[1], 'state')
if st ~= 'running' and st ~= 'verifying' then redis.call('SREM', KEYS[5], ARGV[6]) end
if (st == 'finished' or st == 'unknown') and redis.call('HEXISTS', KEYS[1], 'artifacts') == 1 then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[6], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[6])
end
return 1
`;

/** KEYS: op. ARGV: reason, now_iso → {requested|settled, state, job_id}. */
export const REQUEST_CANCEL = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing', '', ''} end
local s = redis.call('HMGET', KEYS[1], 'state', 'job_id')
if s[1] == 'finished' or s[1] == 'unknown' then return {'settled', s[1], s[2] or ''} end
redis.call('HSET', KEYS[1], 'cancel_requested', ARGV[1], 'updated_at', ARGV[2])
return {'requested', s[1], s[2] or ''}
`;

/**
 * A new attempt after a settled one (rate-limit retry policy): the previous receipt is kept in
 * the attempts list, the record goes back to queued with a fresh job id. KEYS: op, attempts, running.
 * ARGV: owner, now_iso, attempt, job_id, receipt_json, retry_at, operation_id → 1 | 0.
 */
export const NEXT_ATTEMPT = `
local s = redis.call('HMGET', KEYS[1], 'owner', 'state', 'cancel_requested')
if s[1] ~= ARGV[1] or s[2] == 'finished' or s[2] == 'unknown' then return 0 end
if s[3] and s[3] ~= '' then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('HSET', KEYS[1], 'state', 'queued', 'attempt', ARGV[3], 'job_id', ARGV[4], 'runtime_started', '0',
  'owner', '', 'updated_at', ARGV[2], 'retry_at', ARGV[6], 'status', '', 'verdict', '', 'exit_code', '', 'journal', '')
redis.call('SREM', KEYS[3], ARGV[7])
return 1
`;

/**
 * A stalled job that BullMQ gave up on, or a dead owner found by recover: a started runtime
 * makes the record unknown; a runtime that never started goes back to queued (safe to run).
 * Either way the record leaves the running index.
 * KEYS: op, outbox, events, running. ARGV: now_iso, reason, event_json, outbox_json, owner ('' = any),
 * operation_id → new state | ''.
 */
export const ORPHANED = `
local s = redis.call('HMGET', KEYS[1], 'state', 'runtime_started', 'owner')
if s[1] ~= 'running' and s[1] ~= 'verifying' then return '' end
if ARGV[5] ~= '' and s[3] ~= ARGV[5] then return '' end
if s[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'unknown', 'unknown_reason', ARGV[2], 'updated_at', ARGV[1])
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '100000', '*', 'event', ARGV[3])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1000000', '*', 'completion', ARGV[4])
  redis.call('SREM', KEYS[4], ARGV[6])
  return 'unknown'
end
redis.call('HSET', KEYS[1], 'state', 'queued', 'owner', '', 'updated_at', ARGV[1])
redis.call('SREM', KEYS[4], ARGV[6])
return 'queued'
`;

/**
 * Drop an id from the running index unless its record is running or verifying (checked in the
 * same script, so a claim between the watch's read and this write is never lost). KEYS: running, op.
 * ARGV: operation_id → 1 if removed.
 */
export const PRUNE_RUNNING = `
local st = redis.call('HGET', KEYS[2], 'state')
if st == 'running' or st == 'verifying' then return 0 end
return redis.call('SREM', KEYS[1], ARGV[1])
`;
