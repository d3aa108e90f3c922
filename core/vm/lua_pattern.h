/* lua_pattern.h — Lua 5.4's pattern functions (string.find, match, gmatch,
 * gsub) again, with the same results and errors, but counting their steps:
 * every PATTERN_CHECK_EVERY steps they ask an interrupt check whether the
 * call may go on. Why: Lua's own matcher runs inside one C call, where the
 * engine's count hook never fires, and backtracking makes everyday patterns
 * quadratic on hostile input (the trim idiom s:match("^%s*(.-)%s*$") on a
 * text with 100k spaces inside ran a minute past a 1 s --timeout). Ours
 * end such a call at its deadline or on the client's cancel, like the hook
 * does for Lua code.
 *
 * A step is one pattern item tried at one position, one subject character
 * scanned by a repetition, %b or the search for where a match can begin,
 * or a few bytes of a set, a back-reference (%1), a failed plain-find
 * candidate or gsub's output; so the work between two checks is bounded
 * (some microseconds), whatever the pattern and subject. What runs
 * unchecked is linear in its input and done once per call or per match:
 * a plain find's memchr to the next candidate, the scan of the pattern for
 * special characters, one back-reference's memcmp, copying the captures
 * out, gsub's copy of the subject's tail.
 *
 * What stays uninterruptible (C code that neither the hook nor a check
 * sees; each is linear or n log n in its input, so the bounds are
 * --max-message and --memory-limit):
 *   - string.rep, table.concat, string.format, string.pack/unpack,
 *     string.reverse/upper/lower/byte/char, the .. operator and tostring on
 *     huge strings, utf8.len/char/codepoint/offset: one pass over their
 *     input or output (string.rep can build a large output from a small
 *     input: --memory-limit caps it);
 *   - table.sort without a comparator (n log n comparisons in C; with a
 *     comparator, or __lt metamethods, the comparisons are Lua code and are
 *     hooked), table.insert/remove/move/unpack on huge tables (linear);
 *   - load/require compiling a large chunk (the parser is C);
 *   - JSON encoding and decoding (cjson, core/base/json.c): linear;
 *   - a full garbage collection (collectgarbage, or one the allocator
 *     starts): proportional to the heap;
 *   - blocking system calls a script makes (io.read, os.execute,
 *     io.popen, sockets): the hook cannot stop a thread that waits in the
 *     kernel.
 * Function replacements in gsub, __index metamethods of a gsub table, and
 * coroutines are Lua code: the hook covers them.
 *
 * The semantics are those of Lua 5.4's lstrlib.c (MIT licence), which this
 * follows closely: the same recursion points (so "pattern too complex"
 * comes at the same depth), the same lazy error detection (a malformed
 * piece the match never reaches raises nothing), the same messages
 * (tests/unit/test_pattern.lua checks all of it against the Lua linked
 * in). One difference: a gmatch iterator whose call raised can be called
 * again (5.4.4 leaves its depth count short then; later Lua fixed it). */
#ifndef LUAMCP_LUA_PATTERN_H
#define LUAMCP_LUA_PATTERN_H

typedef struct lua_State lua_State;

/* How many steps between two interrupt checks. */
#define PATTERN_CHECK_EVERY 4096

/* Asked every PATTERN_CHECK_EVERY steps, with the state that runs the
   pattern function: NULL to go on, or a message, raised as the call's
   error (luaL_error). It must not raise itself. The message need only live
   until the check is called again. */
typedef const char *(*lua_pattern_interrupt)(lua_State *L);

/* Replace find, match, gmatch and gsub in L's string library (the table in
   package.loaded, which is also the strings' metatable __index, so s:find
   uses them too). check may be NULL: the functions then never stop. */
void lua_pattern_install(lua_State *L, lua_pattern_interrupt check);

#endif
