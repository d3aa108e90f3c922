-- test_pattern.lua — core/vm/lua_pattern.c against Lua's own string.find, match,
-- gmatch and gsub: the same results and the same errors, over fixed cases and
-- thousands of random patterns and subjects. Run by test_pattern.c, which
-- passes ORIG (Lua's functions, saved before lua_pattern_install) and NEW
-- (ours) and, optionally, a seed and a case count.
local ORIG, NEW, seed, rounds = ...
seed = tonumber(seed) or 20240515
rounds = tonumber(rounds) or 6000

local ogsub, oformat = ORIG.gsub, string.format
local failures, cases = 0, 0

-- {====== comparing outcomes

local function show(v)
  if type(v) == "string" then return oformat("%q", v) end
  if math.type(v) == "float" then return oformat("%.17g(float)", v) end
  return tostring(v)
end

local function pack_call(f, ...)
  return table.pack(pcall(f, ...))
end

-- the name in "bad argument #1 to 'x'" tells how the function was reached,
-- not what it did: Lua's, no longer in the string table, shows '?'
local function normalize(msg)
  if type(msg) ~= "string" then return msg end
  return (ogsub(msg, "to '[^']*'", "to '?'"))
end

local function same(a, b)
  if a.n ~= b.n then return false end
  for i = 1, a.n do
    local x, y = a[i], b[i]
    if not a[1] and i == 2 then x, y = normalize(x), normalize(y) end
    if type(x) ~= type(y) or x ~= y or math.type(x) ~= math.type(y) then return false end
  end
  return true
end

local function describe(r)
  local parts = {}
  for i = 1, r.n do parts[#parts + 1] = show(r[i]) end
  return table.concat(parts, ", ")
end

local function report(what, args, a, b)
  failures = failures + 1
  if failures <= 30 then
    local shown = {}
    for i = 1, args.n do shown[i] = show(args[i]) end
    io.stderr:write(oformat("MISMATCH %s(%s)\n  lua:  %s\n  ours: %s\n", what,
      table.concat(shown, ", "), describe(a), describe(b)))
  end
end

-- find, match, gsub with a string/number replacement: compare the returns
local function compare(name, ...)
  cases = cases + 1
  local a = pack_call(ORIG[name], ...)
  local b = pack_call(NEW[name], ...)
  if not same(a, b) then report(name, table.pack(...), a, b) end
end

-- gmatch: every step of the loop, up to the first error
local function run_gmatch(gm, s, p, init)
  local out = {}
  local ok, it = pcall(gm, s, p, init)
  if not ok then return { "error", normalize(it) } end
  for _ = 1, 200 do
    local r = table.pack(pcall(it))
    if not r[1] then
      out[#out + 1] = "error: " .. normalize(r[2])
      break
    end
    if r[2] == nil then break end
    out[#out + 1] = describe(r)
  end
  return out
end

local function compare_gmatch(s, p, init)
  cases = cases + 1
  local a = run_gmatch(ORIG.gmatch, s, p, init)
  local b = run_gmatch(NEW.gmatch, s, p, init)
  local sa, sb = table.concat(a, " | "), table.concat(b, " | ")
  if sa ~= sb then
    report("gmatch", table.pack(s, p, init), { n = 1, sa }, { n = 1, sb })
  end
end

-- gsub with a function (its arguments are logged) or a table replacement
local function compare_gsub_fn(s, p, max, mode)
  cases = cases + 1
  local function run(gsub)
    local log = {}
    local repl
    if mode == "fn" then
      repl = function(...)
        log[#log + 1] = describe(table.pack(...))
        local x = ...
        if x == "a" then return nil end
        if x == "b" then return false end
        if math.type(x) == "integer" then return x * 2 end
        return "<" .. tostring(x) .. ">"
      end
    elseif mode == "badfn" then
      repl = function() return {} end
    else
      repl = setmetatable({ a = "A", b = false, [""] = "E", [1] = 11, [2] = "two" },
        { __index = function(_, k) log[#log + 1] = show(k) end })
    end
    local r = table.pack(pcall(gsub, s, p, repl, max))
    r[r.n + 1] = table.concat(log, ";")
    r.n = r.n + 1
    return r
  end
  local a, b = run(ORIG.gsub), run(NEW.gsub)
  if not same(a, b) then report("gsub/" .. mode, table.pack(s, p, max), a, b) end
end

-- }======

-- {====== fixed cases

local subjects = {
  "", "a", "hello world", "  padded  ", "key=value", "x = 1, y = 22, z = 333",
  "THE (quick) fox", "[[nested]] (a(b)c) ((x)", "a.b.c", "aaa", "abab", "a\0b\0c",
  "f(a(b)c)d", "one two  three", "-12.5e3", "%d%", "\n\t x \r", "^$", "THE (quick) fox",
  "path/to/file.txt", "caf\xc3\xa9", "\xff\xfe", "hello\0", "...",
  -- longer, with matches far apart: the loops skip where no match can begin
  string.rep("x", 40) .. "ab" .. string.rep("y", 30) .. " 123 a\0b",
  "the quick brown fox jumps over the lazy dog 12 times, (really) [ok] %done% $5 ^_^",
}

local patterns = {
  "", "a", ".", "^a", "a$", "^$", "^", "$", "%a+", "%d+", "%s*", "%w+=%w+", "(%w+)=(%w+)",
  "^%s*(.-)%s*$", "%s+", "[%a_][%w_]*", "[^%s]+", "[a-c]+", "[]]", "[^]]", "[%]]", "[a%-z]",
  "[a-]", "[-a]", "%b()", "%b[]", "%bxy", "%f[%a]%a+", "%f[%A]", "%f[%w]%w+%f[%W]", "()a()",
  "()", "(a)(b)", "((a)(b))", "(a*(.)%w(%s*))", "(.)%1", "(a)%1", "%1", "(()", "(a", "a)",
  "%", "%z", "[", "[a", "[^", "%b", "%ba", "%f", "%fa", "%g+", "%p+", "%c", "%x+", "%u%l*",
  "%L", "%.", "%%", "a?b", "a-b", "a*b", "a+b", "ab?", ".-b", ".*b", ".+", "x*", "x-",
  "(x*)", "%d*%.?%d+", "[+-]?%d+", "^[+-]?%d+%.?%d*[eE]?[+-]?%d*$", "a.-a", "(h)(e)(l)(l)(o)",
  "\0", "%z+", "[%z]", "b%z", "[\0-\1]", "(%d)(%d)(%d)(%d)(%d)(%d)(%d)(%d)(%d)(%d)", "%q", "%Q",
  "%0", "(a)%0", "%bab", "%b()%b()", "$$", "a$b", "^^a", "()()()", "(()a())", "%f[a]",
  "%f[^a]", "%f[%z]", "[%a-z]", "[a-%%]", "[%w%p]+", "[^%w%s]", "%S+", "%D", "%W",
}

for _, s in ipairs(subjects) do
  for _, p in ipairs(patterns) do
    for _, init in ipairs({ false, 1, 2, 0, -1, -4, 100 }) do
      local i = init or nil
      compare("find", s, p, i)
      compare("find", s, p, i, true)
      compare("match", s, p, i)
      compare_gmatch(s, p, i)
    end
    for _, r in ipairs({ "%0", "<%1>", "%2", "%%", "x%", "%x", "", "[%0|%1]", 7, 1.5 }) do
      compare("gsub", s, p, r)
      compare("gsub", s, p, r, 1)
    end
    compare_gsub_fn(s, p, nil, "fn")
    compare_gsub_fn(s, p, nil, "table")
    compare_gsub_fn(s, p, 2, "fn")
    compare_gsub_fn(s, p, nil, "badfn")
  end
end

-- the limits: recursion depth, capture count, argument errors
local deep = {
  string.rep("a?", 150), string.rep("a?", 199), string.rep("a?", 200), string.rep("a?", 201),
  string.rep("a?", 300), string.rep("(", 31) .. string.rep(")", 31), string.rep("(", 32),
  string.rep("(a)", 32), string.rep("(a)", 33), string.rep("()", 32), string.rep("()", 33),
  string.rep("a-", 250) .. "b", string.rep("(a*)", 40), string.rep("%f[a]", 300),
  string.rep(".-", 198), string.rep(".-", 199) .. "$", string.rep(".-", 200) .. "$",
}
for _, p in ipairs(deep) do
  for _, s in ipairs({ "", "a", string.rep("a", 40), string.rep("a", 300) .. "b" }) do
    compare("find", s, p)
    compare("match", s, p)
    compare("gsub", s, p, "%0")
    compare_gmatch(s, p)
  end
end
-- a set so long that one try overdraws the step budget, then the search
-- for where a match can begin
for _, s in ipairs({ "aq" .. string.rep("z", 50), "aq" .. string.rep("z", 50) .. "ac" }) do
  for _, p in ipairs({ "a[" .. string.rep("c", 200000) .. "]", "a[" .. string.rep("c", 200000) .. "]-q" }) do
    compare("find", s, p)
    compare("match", s, p)
    compare("gsub", s, p, "<%0>")
    compare_gmatch(s, p)
  end
end
for _, args in ipairs({
  { nil, "a" }, { "a", nil }, { {}, "a" }, { 12, "2" }, { 12.5, "%." }, { "a", "a", "x" },
  { "a", "a", 1.5 }, { "a", "a", "2" }, { "abc", "b", math.mininteger }, { "abc", "b", math.maxinteger },
}) do
  compare("find", args[1], args[2], args[3])
  compare("match", args[1], args[2], args[3])
  compare_gmatch(args[1], args[2], args[3])
end
for _, args in ipairs({
  { "abc", "b" }, { "abc", "b", true }, { "abc", "b", nil, 1 }, { "abc", "b", "x", "y" },
  { "abc", "b", "x", 1.5 }, { "abc", "b", "x", -1 }, { "abc", "", "-" }, { "abc", "", "-", 2 },
  { "abc", "b", {}, nil }, { "abc", "(b)", { b = {} } }, { "abc", "b", "%1" }, { "abc", "b", "%2" },
  { "abc", "()b", "%1" }, { "abc", "()b", "%2" }, { "abc", "(b", "%1" }, { "abc", "b", "%" },
  { "hello world", "o", "0", math.maxinteger }, { "hello world", "o", "0", math.mininteger },
}) do
  compare("gsub", args[1], args[2], args[3], args[4])
end

-- }======

-- {====== random patterns over random subjects

math.randomseed(seed)
local rnd = math.random
local atoms = {
  "a", "b", "x", ".", " ", "%a", "%d", "%s", "%w", "%A", "%S", "%p", "%%", "%.", "%(",
  "[ab]", "[^a]", "[a-c]", "[%a_]", "[%]a]", "[^%s]", "[-]", "(", ")", "()", "(", ")",
  "%b()", "%bab", "%f[%a]", "%f[%s]", "%f[^a]", "%1", "%2", "%0", "$", "^", "\0", "%z",
  "[", "]", "%", "%b", "%f", "%fa", "[a", "-",
}
local suffixes = { "", "", "", "*", "+", "-", "?" }
local subject_chars = { "a", "a", "b", "x", " ", "(", ")", "1", "_", "%", "-", "\0", "[" }

local function random_pattern()
  local parts = {}
  if rnd(4) == 1 then parts[1] = "^" end
  for _ = 1, rnd(0, 7) do
    local atom = atoms[rnd(#atoms)]
    parts[#parts + 1] = atom
    if #atom <= 2 or atom:sub(1, 1) == "[" then parts[#parts + 1] = suffixes[rnd(#suffixes)] end
  end
  if rnd(5) == 1 then parts[#parts + 1] = "$" end
  return table.concat(parts)
end

local function random_subject()
  local t = {}
  for i = 1, rnd(0, 14) do t[i] = subject_chars[rnd(#subject_chars)] end
  return table.concat(t)
end

local inits = { false, false, false, 1, 2, 0, -1, -3, 20 }
local repls = { "%0", "<%1>", "%2", "%%", "x%", "[%1%0]", "-", "%9", 3 }
local maxes = { false, false, 0, 1, 2 }
for _ = 1, rounds do
  local s, p = random_subject(), random_pattern()
  local init = inits[rnd(#inits)] or nil
  compare("find", s, p, init)
  compare("find", s, p, init, rnd(2) == 1)
  compare("match", s, p, init)
  compare_gmatch(s, p, init)
  compare("gsub", s, p, repls[rnd(#repls)], maxes[rnd(#maxes)] or nil)
  local mode = ({ "fn", "table", "badfn" })[rnd(3)]
  compare_gsub_fn(s, p, maxes[rnd(#maxes)] or nil, mode)
end

-- }======

return failures, cases
