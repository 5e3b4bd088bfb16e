import json, sys, collections as C
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {r["uuid"]: r for r in recs if r.get("uuid")}
idx = {r["uuid"]: i+1 for i, r in enumerate(recs) if r.get("uuid")}
def walk(r):
    out = []
    while r:
        out.append(r); p = r.get("parentUuid")
        if p is None and r.get("subtype") == "compact_boundary": p = r.get("logicalParentUuid")
        r = by.get(p)
    return out
start = [r for r in recs if r.get("uuid") and r["type"] in ("user", "assistant")][-1]
cs = {r["uuid"] for r in walk(start)}
def d(r):
    s = r["type"]
    if r["type"] == "progress": s += "/" + r["data"]["type"] + ":" + str(r["data"].get("hookEvent") or r["data"].get("hookName") or "")
    if r["type"] in ("assistant", "user") and isinstance(r["message"]["content"], list):
        s += " " + ",".join(b["type"] + ("(" + b.get("name", "") + " " + b.get("id", b.get("tool_use_id", ""))[-6:] + ")" if "tool" in b["type"] else "") for b in r["message"]["content"])
    if r["type"] == "assistant": s += " mid=" + r["message"]["id"][-6:]
    return s
for r in recs:
    if r.get("type") == "assistant" and r["uuid"] not in cs:
        print("OFF-CHAIN assistant line", idx[r["uuid"]], d(r))
        lo = idx[r["uuid"]] - 8
        for x in recs[lo: lo + 20]:
            if x.get("uuid"): print("   ", idx[x["uuid"]], "ON " if x["uuid"] in cs else "off", x["uuid"][:8], "<-", (x.get("parentUuid") or "None")[:8], d(x))
        print()
