#!/usr/bin/env python3
"""layers.py — the floors of core/ hold (docs/DESIGN.md, "The floors").

  layers.py SOURCE_DIR BUILD_DIR FLOOR:USED,USED...   (CMakeLists.txt's table, cli last)

Each floor may use the floors it names and, through them, what those use
(CMakeLists.txt links each floor's library to the floors it names, and to
nothing else). Fails when
  - a .c or .h file of core/ is in no listed folder, or a listed folder is missing;
  - docs/DESIGN.md's table of floors names other folders, or other "uses", than the build;
  - a file includes ("...") a header of a floor its own may not use, or one
    that is nowhere in core/;
  - at link level (nm over the build's objects: an arrow A -> B when A uses a
    symbol B defines) an arrow goes to a floor A's may not use, or files call
    each other in a circle that is not in CIRCLES below.
Prints the arrows between floors it counted, so a reader sees the shape."""
import collections
import os
import re
import subprocess
import sys

# Circles of calls allowed, each for a stated reason; any other circle fails.
CIRCLES = [
    # the engine: the loop, the calls it runs, their errors and the
    # watchdog share one private header (engine_internal.h) on purpose; a
    # call's light threads (call_threads.c) are resumed and ended by call.c
    # and park through it
    {'engine.c', 'call.c', 'call_error.c', 'call_threads.c', 'watchdog.c'},
    # the bus carries task requests between instances and delivers the
    # ones it hears to tasks_remote: one job in two files, each half small
    {'bus.c', 'tasks_remote.c'},
]

src, build, table = sys.argv[1], sys.argv[2], sys.argv[3:]
layers = [t.split(':', 1)[0] for t in table]
direct = {t.split(':', 1)[0]: [u for u in t.split(':', 1)[1].split(',') if u] for t in table}
rank = {name: i for i, name in enumerate(layers)}


def closure(floor, seen=None):
    seen = set() if seen is None else seen
    for u in direct.get(floor, []):
        if u not in seen:
            seen.add(u)
            closure(u, seen)
    return seen


may_use = {f: closure(f) | {f} for f in layers}
core = os.path.join(src, 'core')
failures = []


def fail(msg):
    failures.append(msg)


for f in layers:
    for u in direct[f]:
        if u not in rank or rank[u] >= rank[f]:
            failures.append(f'{f} uses {u}, which is not a floor listed before it')


# {====== files and folders
floor_of = {}  # file name (unique across core/) -> floor
for entry in sorted(os.listdir(core)):
    path = os.path.join(core, entry)
    if not os.path.isdir(path):
        if entry.endswith(('.c', '.h')):
            fail(f'core/{entry}: in no floor (a folder of core/)')
        continue
    if entry not in rank:
        fail(f'core/{entry}/: a folder that is no floor (the list: {" ".join(layers)})')
        continue
    for f in sorted(os.listdir(path)):
        if f.endswith(('.c', '.h')):
            if f in floor_of:
                fail(f'core/{entry}/{f}: the name is also in core/{floor_of[f]}/')
            floor_of[f] = entry
for name in layers:
    if not os.path.isdir(os.path.join(core, name)):
        fail(f'core/{name}/: listed as a floor, missing')
# }======

# {====== DESIGN.md names the same floors
design = open(os.path.join(src, 'docs', 'DESIGN.md'), encoding='utf-8').read()
rows = re.findall(r'^\| `core/([a-z_]+)/` \|.*\| ([a-z_, —-]+) \|\s*$', design, re.M)
named = [r[0] for r in rows]
if named != layers:
    fail(f'docs/DESIGN.md: its table of floors says {named}, the build says {layers} (lowest first)')
for floor, uses in rows:
    said = sorted(u.strip() for u in uses.split(',') if u.strip() not in ('', '—', '-'))
    if floor in direct and said != sorted(direct[floor]):
        fail(f'docs/DESIGN.md: core/{floor}/ "uses" {said or "nothing"}; CMakeLists.txt says {sorted(direct[floor]) or "nothing"}')
# }======

# {====== includes
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for f, floor in sorted(floor_of.items()):
    text = open(os.path.join(core, floor, f), encoding='utf-8').read()
    for h in include.findall(text):
        if h not in floor_of:
            fail(f'core/{floor}/{f}: includes "{h}", which is in no floor')
        elif floor_of[h] not in may_use[floor]:
            fail(f'core/{floor}/{f}: includes "{h}" of core/{floor_of[h]}/, which core/{floor}/ may not use')
# }======

# {====== link-level arrows
defs, uses = {}, collections.defaultdict(set)
objects = []
for root, _, names in os.walk(os.path.join(build, 'CMakeFiles')):
    if not re.search(r'/luamcp(_[a-z]+)?\.dir', root) or 'luamcp_tls' in root:
        continue
    objects += [os.path.join(root, n) for n in names if n.endswith('.c.o')]
for o in objects:
    name = os.path.basename(o)[:-2]  # x.c
    if name not in floor_of:
        continue  # generated (the embedded Lua)
    out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in 'TDBRC':
            defs[p[2]] = name
        elif len(p) == 2 and p[0] == 'U':
            uses[name].add(p[1])
if not objects:
    fail(f'{build}: no object files to read (build first)')
edges = collections.defaultdict(set)
between = collections.Counter()
for a, syms in uses.items():
    for s in syms:
        b = defs.get(s)
        if not b or b == a:
            continue
        edges[a].add(b)
        fa, fb = floor_of[a], floor_of[b]
        if fb not in may_use[fa]:
            fail(f'core/{fa}/{a} uses {s} of core/{fb}/{b}, which core/{fa}/ may not use')
        if fa != fb:
            between[(fa, fb)] += 1

index, low, stack, on, circles = {}, {}, [], set(), []
sys.setrecursionlimit(10000)


def strong(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            strong(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop()
            on.discard(w)
            c.append(w)
            if w == v:
                break
        if len(c) > 1:
            circles.append(sorted(c))


for v in sorted(set(defs.values()) | set(uses)):
    if v not in index:
        strong(v)
for c in circles:
    if set(c) not in CIRCLES:
        floors = {floor_of[f] for f in c}
        fail(f'a circle of calls joins {len(c)} files ({", ".join(c)}) in {", ".join(sorted(floors))}, '
             'and is not on the list of circles allowed (tests/layers.py)')
# }======

shape = ' '.join(f + '(' + ','.join(direct[f]) + ')' for f in layers)
print(f'floors (each with what it uses): {shape}; {len(floor_of)} files, {len(objects)} objects read')
for (fa, fb), n in sorted(between.items(), key=lambda kv: (rank[kv[0][0]], rank[kv[0][1]])):
    print(f'  {fa} -> {fb}: {n} arrows')
for c in circles:
    print(f'  a circle inside core/{floor_of[c[0]]}/: {", ".join(c)}')
for msg in failures:
    print('FAIL', msg)
sys.exit(1 if failures else 0)
