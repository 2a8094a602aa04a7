-- The annotators' closed loop, driven by wrk (a load generator in C) instead of Python: judgements as
-- the voting page makes them. Used by bench_load.py's vote-wrk and crowd-wrk phases:
--
--     wrk -t50 -c50 -d15s --timeout 30s -s judgements.lua http://127.0.0.1:8114 -- \
--         CREDENTIALS /api/studies/bench/next/ THINK_MS SPREAD_MS HELD_IN HELD_OUT SEED
--
-- One annotator per wrk thread, so run it with as many threads as connections: each thread has a Lua
-- state of its own, and that state is the annotator (its cookies, its CSRF token, the comparison it
-- holds). CREDENTIALS holds one line per annotator who has already joined, "Cookie header<TAB>token",
-- in the order of the threads. Without a comparison the annotator asks GET next; each vote's answer
-- (201) carries the next comparison, which the following vote judges; an answer without one sends the
-- annotator back to GET next after the wait the server asked for, as the voting page does (Retry-After
-- on a 204, 429 or 503; "next_retry_after" in a vote's answer; at most 30 s), or after 250 ms when it
-- named none. The choice is left or right at random: the cost of a vote on the server does not
-- depend on it.
--
-- THINK_MS: the mean think time (exponential) between a comparison and its vote; 0 for none.
-- SPREAD_MS: the first GET next of each annotator is sent at a uniform time within it (arrivals).
-- HELD_IN, HELD_OUT ("-" for none): files of one line per annotator, the assignment they hold (or an
-- empty line). A run that reads HELD_IN starts where the run that wrote it as HELD_OUT stopped: its
-- annotators think, then vote on the comparison they hold, so that a measured run is in its steady
-- state from its start. wrk's latencies count from a request's sending to its answer: think time and
-- pauses are not in them.
-- SEED: with the thread's number, the seed of its random numbers (think times, choices). Runs that
-- follow each other need different seeds: with the same one, an annotator whose first think time
-- outlasts a run draws it again in the next, and never votes on the comparison they hold.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("index", #threads)
end

local function line_of(path, number)
  local file = assert(io.open(path, "r"))
  local found = nil
  local current = 0
  for line in file:lines() do
    current = current + 1
    if current == number then
      found = line
      break
    end
  end
  file:close()
  return found
end

function init(args)
  local line = assert(line_of(args[1], index), "no credentials for thread " .. index)
  cookie, token = line:match("^(.-)\t(.-)$")
  next_path = args[2]
  think_ms = tonumber(args[3] or "0")
  spread_ms = tonumber(args[4] or "0")
  held_out = args[6] or "-"
  assignment = nil
  if (args[5] or "-") ~= "-" then
    assignment = tonumber(line_of(args[5], index) or "")
  end
  math.randomseed(index + 100003 * tonumber(args[7] or "0"))
  first, sent, pause = true, nil, 0
  votes_created, votes_already, votes_refused, votes_throttled, votes_other, votes_without_next = 0, 0, 0, 0, 0, 0
  nexts_ok, nexts_other, nexts_waiting, server_errors = 0, 0, 0, 0
  longest_retry_after = 0
  waits_all_leased, waits_ballot_closing, waits_finished, waits_none_for_you, waits_other = 0, 0, 0, 0, 0
end

local PAUSE_MS = 250  -- nothing to judge and no wait named: ask again after this
local MAX_RETRY_S = 30  -- the voting page's bound on a wait the server names (vote.js)

-- The wait the server named, in whole seconds: the Retry-After header, else a vote answer's
-- "next_retry_after"; nil when it named none.
local function retry_after(headers, body)
  local header = headers["Retry-After"] or headers["retry-after"]
  local seconds = tonumber(header or "")
  if seconds == nil and body ~= nil then
    seconds = tonumber(body:match('"next_retry_after"%s*:%s*(%d+)') or "")
  end
  return seconds
end

-- Why there was nothing to judge: the X-Yardstick-Reason header of a 204, a vote answer's "next_reason".
local function count_wait(headers, body)
  local reason = headers["X-Yardstick-Reason"] or headers["x-yardstick-reason"]
  if reason == nil and body ~= nil then
    reason = body:match('"next_reason"%s*:%s*"([%w_]+)"')
  end
  if reason == "all_leased" then
    waits_all_leased = waits_all_leased + 1
  elseif reason == "ballot_closing" then
    waits_ballot_closing = waits_ballot_closing + 1
  elseif reason == "finished" then
    waits_finished = waits_finished + 1
  elseif reason == "none_for_you" then  -- every pair left judged by this annotator already
    waits_none_for_you = waits_none_for_you + 1
  else
    waits_other = waits_other + 1
  end
end

local function think()
  if think_ms <= 0 then
    return 0
  end
  return math.floor(-think_ms * math.log(1 - math.random()))
end

function delay()
  local wait = 0
  if assignment ~= nil then
    wait = think()  -- memoryless: a carried comparison's first vote waits as any other
  elseif first then
    wait = math.floor(math.random() * spread_ms)
  else
    wait = pause
  end
  first = false
  return wait
end

function request()
  if assignment == nil then
    sent = "next"
    return wrk.format("GET", next_path, { ["Cookie"] = cookie, ["Accept"] = "application/json" })
  end
  sent = "vote"
  local choice = math.random() < 0.5 and "left" or "right"
  local body = string.format('{"assignment":%d,"choice":"%s","client_response_ms":%d}', assignment, choice, 2000)
  return wrk.format("POST", "/api/votes/", {
    ["Cookie"] = cookie,
    ["X-CSRFToken"] = token,
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json",
  }, body)
end

function response(status, headers, body)
  if status >= 500 then
    server_errors = server_errors + 1
  end
  if sent == "vote" then
    if status == 201 then
      votes_created = votes_created + 1
    elseif status == 200 then  -- recorded by an earlier request: a vote sent again
      votes_already = votes_already + 1
    elseif status == 409 then  -- the lease expired or the ballot closed
      votes_refused = votes_refused + 1
    elseif status == 429 then  -- over a rate limit: GET next after the pause, as the page would
      votes_throttled = votes_throttled + 1
    else
      votes_other = votes_other + 1
      io.stderr:write(string.format("vote answered %d: %s\n", status, body:sub(1, 300)))
    end
    -- 201 or 200 carry the next comparison in "next" (null when there is none); anything else: GET next.
    assignment = tonumber(body:match('"next"%s*:%s*{%s*"assignment"%s*:%s*(%d+)'))
    if assignment == nil then
      votes_without_next = votes_without_next + 1
    end
  else
    if status == 200 then
      nexts_ok = nexts_ok + 1
      assignment = tonumber(body:match('^%s*{%s*"assignment"%s*:%s*(%d+)'))
    elseif status == 204 then  -- nothing to judge now (a ballot closing, the study over): wait
      nexts_waiting = nexts_waiting + 1
      assignment = nil
    else
      nexts_other = nexts_other + 1
      assignment = nil
    end
  end
  -- Nothing to judge: wait as an annotator's page would before asking again (not in a busy loop).
  pause = 0
  if assignment == nil then
    count_wait(headers, body)
    local seconds = retry_after(headers, body)
    if seconds == nil then
      pause = PAUSE_MS
    else
      seconds = math.max(1, math.min(seconds, MAX_RETRY_S))
      longest_retry_after = math.max(longest_retry_after, seconds)
      pause = seconds * 1000
    end
  end
end

function done(summary, latency, requests)
  local totals = {
    votes_created = 0, votes_already = 0, votes_refused = 0, votes_throttled = 0, votes_other = 0,
    votes_without_next = 0, nexts_ok = 0, nexts_other = 0, nexts_waiting = 0, server_errors = 0,
    waits_all_leased = 0, waits_ballot_closing = 0, waits_finished = 0, waits_none_for_you = 0, waits_other = 0,
  }
  local longest = 0
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do
      totals[name] = totals[name] + thread:get(name)
    end
    longest = math.max(longest, thread:get("longest_retry_after"))
  end
  totals.longest_retry_after_s = longest
  local held_out = threads[1] and threads[1]:get("held_out") or "-"
  if held_out ~= "-" then
    local file = assert(io.open(held_out, "w"))
    for _, thread in ipairs(threads) do
      local held = thread:get("assignment")
      file:write((held and string.format("%d", held) or "") .. "\n")
    end
    file:close()
  end
  local line = {}
  for name, value in pairs(totals) do
    table.insert(line, string.format("%s=%d", name, value))
  end
  for _, percent in ipairs({ 50, 95, 99 }) do
    table.insert(line, string.format("p%d_us=%d", percent, latency:percentile(percent)))
  end
  table.insert(line, string.format("requests=%d", summary.requests))
  table.insert(line, string.format("socket_errors=%d", summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout))
  io.write("judgements: " .. table.concat(line, " ") .. "\n")
end
