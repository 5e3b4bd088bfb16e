# "Message-complete" view: the strict chain plus every assistant record sharing a chain message.id,
# plus every user tool_result record answering a tool_use from those.
import json, sys, collections as C
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {r["uuid"]: r for r in recs if r.get("uuid")}
def walk(r):
    out = []
    while r:
        out.append(r); p = r.get("parentUuid")
        if p is None and r.get("subtype") == "compact_boundary": p = r.get("logicalParentUuid")
        r = by.get(p)
    return out[::-1]
chain = walk([r for r in recs if r.get("uuid") and r["type"] in ("user", "assistant")][-1])
cs = {r["uuid"] for r in chain}
mids = {r["message"]["id"] for r in chain if r["type"] == "assistant"}
A = [r for r in recs if r.get("type") == "assistant" and r["message"]["id"] in mids]
tu = {b["id"]: b["name"] for r in A for b in r["message"]["content"] if b["type"] == "tool_use"}
TR = [r for r in recs if r.get("type") == "user" and isinstance(r["message"]["content"], list) and any(b.get("type") == "tool_result" and b["tool_use_id"] in tu for b in r["message"]["content"])]
print("assistant records sharing chain message.ids:", len(A), "(off strict chain:", sum(r["uuid"] not in cs for r in A), ")")
print("tool_use blocks in those:", len(tu), " tool_result records answering them:", len(TR), "(off strict chain:", sum(r["uuid"] not in cs for r in TR), ")")
print("names:", dict(C.Counter(tu.values()).most_common()))
ans = {b["tool_use_id"] for r in TR for b in r["message"]["content"] if b.get("type") == "tool_result"}
print("tool_use without any result in file:", [(k, v) for k, v in tu.items() if k not in ans])
print("is_error results:", sum(1 for r in TR for b in r["message"]["content"] if b.get("type") == "tool_result" and b.get("is_error")))
print("off-chain uuid records total:", sum(1 for r in recs if r.get("uuid") and r["uuid"] not in cs), dict(C.Counter(r["type"] for r in recs if r.get("uuid") and r["uuid"] not in cs)))
