#!/usr/bin/env python3
"""layers.py — the floors of core/ hold (docs/DESIGN.md, "The floors").

  layers.py SOURCE_DIR BUILD_DIR LAYER...     (lowest first; cli, the top, last)

Fails when
  - a .c or .h file of core/ is in no listed folder, or a listed folder is missing;
  - docs/DESIGN.md's table of floors names other folders than the list;
  - a file includes ("...") a header of a higher floor, or one that is nowhere in core/;
  - at link level (nm over the build's objects: an arrow A -> B when A uses a
    symbol B defines) an arrow goes up a floor, or a circle of arrows joins more
    than MAX_CIRCLE files (a few files may share an internal header on purpose).
Prints the arrows between floors it counted, so a reader sees the shape."""
import collections
import os
import re
import subprocess
import sys

MAX_CIRCLE = 4

src, build, layers = sys.argv[1], sys.argv[2], sys.argv[3:]
rank = {name: i for i, name in enumerate(layers)}
core = os.path.join(src, 'core')
failures = []


def fail(msg):
    failures.append(msg)


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
named = re.findall(r'^\| `core/([a-z_]+)/` \|', design, re.M)
if named != layers:
    fail(f'docs/DESIGN.md: its table of floors says {named}, the build says {layers} (lowest first)')
# }======

# {====== includes
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for f, floor in sorted(floor_of.items()):
    text = open(os.path.join(core, floor, f), encoding='utf-8').read()
    for h in include.findall(text):
        if h not in floor_of:
            fail(f'core/{floor}/{f}: includes "{h}", which is in no floor')
        elif rank[floor_of[h]] > rank[floor]:
            fail(f'core/{floor}/{f}: includes "{h}" of core/{floor_of[h]}/, a higher floor')
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
        if rank[fb] > rank[fa]:
            fail(f'core/{fa}/{a} uses {s} of core/{fb}/{b}: an arrow up a floor')
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
    floors = {floor_of[f] for f in c}
    if len(floors) > 1 or len(c) > MAX_CIRCLE:
        fail(f'a circle of calls joins {len(c)} files ({", ".join(c)}) in {", ".join(sorted(floors))}')
# }======

print(f'floors (lowest first): {" ".join(layers)}; {len(floor_of)} files, {len(objects)} objects read')
for (fa, fb), n in sorted(between.items(), key=lambda kv: (rank[kv[0][0]], rank[kv[0][1]])):
    print(f'  {fa} -> {fb}: {n} arrows')
for c in circles:
    print(f'  a circle inside core/{floor_of[c[0]]}/: {", ".join(c)}')
for msg in failures:
    print('FAIL', msg)
sys.exit(1 if failures else 0)
