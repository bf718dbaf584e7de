-- Drives the hdcontext daemon with Neovim's own LSP client (vim.lsp), headless.
-- Inputs come from the environment; the outcome is written as JSON to HDC_OUT, and the exit
-- status is 0 only when every check passed. Works with Neovim 0.7 (Debian bookworm) and later.
local python = assert(os.getenv("HDC_PYTHON"))
local storage = assert(os.getenv("HDC_STORAGE"))
local root = assert(os.getenv("HDC_ROOT"))
local out = assert(os.getenv("HDC_OUT"))
local TIMEOUT = 30000

local report = { checks = {}, tokens = 0 }

local function finish(code)
  local fh = assert(io.open(out, "w"))
  fh:write(vim.fn.json_encode(report))
  fh:close()
  vim.cmd("cquit " .. code)
end

local function check(name, ok)
  table.insert(report.checks, { name = name, ok = ok and true or false })
  if not ok then
    error("check failed: " .. name)
  end
end

local function text(speaker, body)
  return { speaker = speaker, blocks = { { type = "text", text = body } } }
end

local ok, err = pcall(function()
  local init_result = nil
  local client_id = vim.lsp.start_client({
    name = "hdcontext",
    cmd = { python, "-m", "hdcontext", "serve" },
    root_dir = root,
    init_options = { storageDir = storage },
    handlers = {
      ["history/tokens"] = function()
        report.tokens = report.tokens + 1
      end,
    },
    on_init = function(_, result)
      init_result = result
    end,
  })
  check("client started", client_id ~= nil)
  check("initialized", vim.wait(TIMEOUT, function() return init_result ~= nil end, 20))
  local client = vim.lsp.get_client_by_id(client_id)
  local caps = init_result.capabilities
  check("protocolVersion 2", caps.experimental.hdcontext.protocolVersion == 2)
  check("serverInfo.name", init_result.serverInfo.name == "hdcontext")
  check("serverInfo.version", type(init_result.serverInfo.version) == "string")

  local function call(method, params)
    local response, why = client.request_sync(method, params, TIMEOUT, 0)
    if response == nil then
      error(method .. " failed: " .. tostring(why))
    end
    if response.err ~= nil then
      error(method .. " error " .. tostring(response.err.code) .. ": " .. tostring(response.err.message))
    end
    return response.result
  end

  local sid = "nvim-session"
  local status = call("history/open", { sessionId = sid })
  check("open answers a Status", status.sessionId == sid and status.version == 0)

  local entries = {
    text("human", "Change a.py to print 2."),
    { speaker = "ai", blocks = { { type = "tool_call", id = "r1", name = "read_file",
      parameters = { file_path = "a.py" } } } },
    { speaker = "tool", blocks = { { type = "tool_response", callId = "r1",
      toolName = "read_file", result = "print(1)\n" } } },
    { speaker = "ai", blocks = { { type = "tool_call", id = "w1", name = "write_file",
      parameters = { file_path = "a.py", content = "print(2)\n" } } } },
    { speaker = "tool", blocks = { { type = "tool_response", callId = "w1",
      toolName = "write_file", result = "ok" } } },
    text("ai", "Done."),
  }
  status = call("history/append", { sessionId = sid, entries = entries })
  check("append counted six entries", status.entryCount == 6)

  local result = call("history/compact", { sessionId = sid })
  check("one read→write pair pruned", result.density.metadata.readWritePairsPruned >= 1)
  local read_left, write_left = false, false
  for _, entry in ipairs(result.history) do
    for _, block in ipairs(entry.blocks) do
      if block.id == "r1" or block.callId == "r1" then read_left = true end
      if block.id == "w1" or block.callId == "w1" then write_left = true end
    end
  end
  check("the stale read is gone", not read_left)
  check("the write stays", write_left)
  report.entries_after = #result.history

  local got = call("history/get", { sessionId = sid, view = "transcript" })
  check("the transcript keeps all six", #got.entries == 6)
  check("history/tokens notifications arrived", report.tokens >= 3)

  client.stop()
  vim.wait(TIMEOUT, function() return client.is_stopped() end, 20)
end)

if ok then
  report.ok = true
  finish(0)
else
  report.ok = false
  report.error = tostring(err)
  finish(1)
end
