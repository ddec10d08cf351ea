#!/usr/bin/env python3
"""The engine's folders are layers (src/engine/layers.cmake): a file of folder A may include a
header of folder B only when B is A itself or a layer A declares (directly or through the layers
it declares). Also: the other components a folder's files include, and engine-private headers
outside the engine. Prints each violation as file:line; exit status 1 when there is one."""
import os, re, sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '../../..'))
engine = os.path.join(root, 'src/engine')
text = open(os.path.join(engine, 'layers.cmake')).read()
order, deps, links = [], {}, {}
for m in re.finditer(r'^rankd_engine_layer\((\w+)([^)]*)\)', text, re.M):
    name, args = m.group(1), m.group(2).split()
    section, d, l = None, [], []
    for a in args:
        if a in ('DEPS', 'PUBLIC', 'PRIVATE', 'SOURCES'): section = a; continue
        (d if section == 'DEPS' else l).append(a)
    bad = [x for x in d if x not in order]
    if bad: print(f'layers.cmake: {name} names {bad}, not a layer below it')
    order.append(name); deps[name] = set(d); links[name] = ' '.join(l)
closure = {}
for f in order:
    c = set(deps[f])
    for d in deps[f]: c |= closure.get(d, set())
    closure[f] = c
# Other components: what a layer may include of them.
def allowed_external(f, header):
    comp = header.split('/')[1]
    if comp == 'runtime' and header == 'rankd/runtime/debug_check.h':
        return any('DEBUG_CHECK' in links[g] or 'RUNTIME' in links[g] for g in closure[f] | {f})
    if comp == 'runtime': return any('RUNTIME' in links[g] for g in closure[f] | {f})
    if comp == 'redis': return any('REDIS' in links[g] for g in closure[f] | {f})
    return False  # net, http, service: never
inc = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
def folder_of(path):
    p = os.path.relpath(path, engine).split(os.sep)
    return p[3] if p[0] == 'include' else p[0]
errors = 0
for dp, _, fs in os.walk(engine):
    for fn in sorted(fs):
        if not fn.endswith(('.h', '.cpp', '.in')): continue
        path = os.path.join(dp, fn); a = folder_of(path)
        for n, line in enumerate(open(path, encoding='utf-8'), 1):
            m = inc.match(line)
            if not m: continue
            h = m.group(1); parts = h.split('/')
            if h.startswith('rankd/engine/'): b = parts[2]
            elif h.startswith('rankd/'):
                if not allowed_external(a, h):
                    errors += 1; print(f'{os.path.relpath(path, root)}:{n}: {a} may not include {h}')
                continue
            elif len(parts) > 1 and parts[0] in deps: b = parts[0]
            else: continue
            if b != a and b not in closure.get(a, ()):
                errors += 1
                print(f'{os.path.relpath(path, root)}:{n}: {a} includes {h} of {b}, '
                      f'{"a layer above it" if b in order and order.index(b) > order.index(a) else "not a layer it declares"}')
# Outside the engine, only the public headers (tests/ and fuzz/ may reach private ones).
for top in ('src/service', 'src/http', 'src/redis', 'src/net', 'src/runtime', 'apps', 'bench'):
    for dp, _, fs in os.walk(os.path.join(root, top)):
        for fn in fs:
            if not fn.endswith(('.h', '.cpp')): continue
            path = os.path.join(dp, fn)
            for n, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
                m = inc.match(line)
                if m and m.group(1).split('/')[0] in deps:
                    errors += 1; print(f'{os.path.relpath(path, root)}:{n}: engine-private header {m.group(1)}')
                if m and top in ('src/http', 'src/redis', 'src/net', 'src/runtime') and m.group(1).startswith('rankd/engine/'):
                    errors += 1; print(f'{os.path.relpath(path, root)}:{n}: {top} includes the engine')
sys.exit(1 if errors else 0)
