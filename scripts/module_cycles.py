#!/usr/bin/env python3
"""Import circles between the engine's modules (issue 15: "no import circles inside the crate").

Lists every `crate::` / `super::` / `self::` path in each module's non-test code under
crates/tersedb/src, resolves it to the module it names, and prints the strongly connected
components of more than one module. A module's own descendants are not counted (a parent and
its child may call each other: that is one component split over files). Exit 1 when a circle
exists. Usage: python3 scripts/module_cycles.py [SRC_DIR]
"""
import os
import re
import sys
root=sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates', 'tersedb', 'src')
mods={}
for dp,dn,fn in os.walk(root):
    for f in fn:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f)
        rel=os.path.relpath(p,root)[:-3]
        parts=rel.split('/')
        if parts[-1] in ('mod','lib'): parts=parts[:-1]
        mods['::'.join(parts)]=p
def resolve(cur, segs):
    if segs[0]=='crate': base=[]; segs=segs[1:]
    elif segs[0]=='super':
        base=cur[:-1]; segs=segs[1:]
        while segs and segs[0]=='super': base=base[:-1]; segs=segs[1:]
    elif segs[0]=='self': base=cur; segs=segs[1:]
    else: return None
    for i in range(len(segs),-1,-1):
        m='::'.join(base+segs[:i])
        if m in mods: return m
edges={m:set() for m in mods}
for m,p in mods.items():
    cur=m.split('::') if m else []
    # A test module's body is not the module's code (its own attributes may come between);
    # a `mod tests;` declaration cuts nothing (that file is a module of its own).
    src=re.split(r'#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod tests\s*\{',open(p).read())[0]
    src=re.sub(r'//[^\n]*','',src)
    for mm in re.finditer(r'\b(?:crate|super|self)(?:::\w+)+',src):
        t=resolve(cur,mm.group(0).split('::'))
        if t and t!=m and not t.startswith(m+'::'): edges[m].add(t)
idx={};low={};st=[];on=set();res=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: res.append(comp)
for v in edges:
    if v not in idx: sc(v)
for r in res:
    print('import circle:', ', '.join(f'{a} -> {sorted(edges[a] & set(r))}' for a in sorted(r)))
if res:
    sys.exit(1)
print(f'no import circle among {len(mods)} modules')
