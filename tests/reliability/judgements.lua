-- The vote phase's closed loop, driven by wrk (a load generator in C) instead of Python: the
-- annotators' judgements as the voting page makes them. Used by bench_load.py's vote-wrk phase:
--
--     wrk -t50 -c50 -d15s -s judgements.lua http://127.0.0.1:8114 -- CREDENTIALS /api/studies/bench/next/
--
-- One annotator per wrk thread, so run it with as many threads as connections: each thread has a Lua
-- state of its own, and that state is the annotator (its cookies, its CSRF token, the comparison it
-- holds). CREDENTIALS holds one line per annotator who has already joined, "Cookie header<TAB>token",
-- in the order of the threads. The first request is GET next; each vote's answer (201) carries the next
-- comparison, which the following vote judges; without one, GET next again after a short pause. The
-- choice is left or right at random: the cost of a vote on the server does not depend on it.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("index", #threads)
end

function init(args)
  local file = assert(io.open(args[1], "r"))
  local number = 0
  for line in file:lines() do
    number = number + 1
    if number == index then
      cookie, token = line:match("^(.-)\t(.-)$")
    end
  end
  file:close()
  assert(cookie, "no credentials for thread " .. index)
  next_path = args[2]
  math.randomseed(index)
  assignment, sent, pause = nil, nil, 0
  votes_created, votes_other, votes_without_next, nexts_ok, nexts_other, server_errors = 0, 0, 0, 0, 0, 0
end

function delay()
  return pause
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
    else
      votes_other = votes_other + 1
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
    else
      nexts_other = nexts_other + 1
      assignment = nil
    end
  end
  -- Nothing to judge: wait as an annotator's page would before asking again (not in a busy loop).
  pause = assignment == nil and 250 or 0
end

function done(summary, latency, requests)
  local totals = {
    votes_created = 0, votes_other = 0, votes_without_next = 0, nexts_ok = 0, nexts_other = 0, server_errors = 0,
  }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do
      totals[name] = totals[name] + thread:get(name)
    end
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
