import json, sys, collections as C
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {r["uuid"]: r for r in recs if r.get("uuid")}
def walk(r):
    out = []
    while r:
        out.append(r); p = r.get("parentUuid")
        if p is None and r.get("subtype") == "compact_boundary": p = r.get("logicalParentUuid")
        r = by.get(p)
    return out
start = [r for r in recs if r.get("uuid") and r["type"] in ("user", "assistant")][-1]
chain = walk(start); cs = {r["uuid"] for r in chain}
roots = [r for r in recs if r.get("uuid") and r.get("parentUuid") is None]
print("records with parentUuid null:", [(r["type"], r.get("subtype"), r["uuid"][:8], recs.index(r)+1) for r in roots])
kids = C.defaultdict(list)
for r in recs:
    if r.get("uuid") and r.get("parentUuid"): kids[r["parentUuid"]].append(r)
# off-chain records with a tool_result: describe path to chain
n = 0; kinds = C.Counter()
for r in recs:
    if r.get("type") == "user" and r["uuid"] not in cs and isinstance(r["message"]["content"], list) and any(b.get("type") == "tool_result" for b in r["message"]["content"]):
        path = []; x = r
        while x["uuid"] not in cs:
            path.append(x["type"] + ("/" + x["data"]["type"] if x["type"] == "progress" else "")); x = by[x["parentUuid"]]
        j = x["type"] + ("/" + x["data"]["type"] if x["type"] == "progress" else "")
        kinds[(tuple(path), j)] += 1
        # does it have children?
for k, v in kinds.items(): print(v, k)
# leaves
leaves = [r for r in recs if r.get("uuid") and r["uuid"] not in kids]
print("leaf records (no children):", len(leaves), dict(C.Counter(r["type"] + ("/" + r["data"]["type"] if r["type"] == "progress" else "") for r in leaves)))
# branch points on chain: chain record with >1 child
bp = [r for r in chain if len(kids[r["uuid"]]) > 1]
print("chain records with >1 child:", len(bp), dict(C.Counter(r["type"] for r in bp)))
