#!/usr/bin/env python3
"""Facts about a Claude Code session JSONL, plain json only. Usage: cc_facts.py FILE"""
import json, sys, collections as C
P = sys.argv[1]
recs = [json.loads(l) for l in open(P) if l.strip()]
print("lines/records:", len(recs))
print("by type:", dict(C.Counter(r.get("type") for r in recs)))
print("system subtypes:", dict(C.Counter(r.get("subtype") for r in recs if r.get("type") == "system")))
print("progress data.type:", dict(C.Counter((r.get("data") or {}).get("type") for r in recs if r.get("type") == "progress")))
print("with uuid:", sum(1 for r in recs if "uuid" in r), " uuid==None:", sum(1 for r in recs if "uuid" in r and r["uuid"] is None))
uu = C.Counter(r["uuid"] for r in recs if r.get("uuid"))
print("duplicate uuids:", sum(1 for k, v in uu.items() if v > 1))
by = {r["uuid"]: r for r in recs if r.get("uuid")}
last_uuid = [r for r in recs if r.get("uuid")][-1]
print("very last uuid record:", last_uuid["type"], last_uuid.get("subtype"), last_uuid["uuid"], "line", recs.index(last_uuid) + 1)
start = [r for r in recs if r.get("uuid") and r.get("type") in ("user", "assistant")][-1]
print("chain start (last user/assistant):", start["type"], start["uuid"], "line", recs.index(start) + 1)
chain = []; r = start; seen = set(); missing = []
while r is not None:
    if r["uuid"] in seen: print("CYCLE"); break
    seen.add(r["uuid"]); chain.append(r)
    p = r.get("parentUuid")
    if p is None and r.get("type") == "system" and r.get("subtype") == "compact_boundary":
        p = r.get("logicalParentUuid")
    if p is None: break
    if p not in by: missing.append(p); break
    r = by[p]
chain.reverse()
print("chain root:", chain[0]["type"], chain[0]["uuid"], "missing parent:", missing)
# also: chain from the very last uuid record
def walk(r):
    n = 0
    while r is not None:
        n += 1; p = r.get("parentUuid")
        if p is None and r.get("subtype") == "compact_boundary": p = r.get("logicalParentUuid")
        r = by.get(p) if p else None
    return n
print("chain length from last user/assistant:", len(chain), " from very last uuid record:", walk(last_uuid))
print("chain by type:", dict(C.Counter(r["type"] for r in chain)))
print("chain system subtypes:", dict(C.Counter(r.get("subtype") for r in chain if r["type"] == "system")))
print("chain progress data.type:", dict(C.Counter(r["data"].get("type") for r in chain if r["type"] == "progress")))
def content(r):
    return (r.get("message") or {}).get("content")
def ukind(r):
    c = content(r)
    if r.get("isCompactSummary"): return "compact_summary"
    if r.get("isMeta"): return "meta"
    if isinstance(c, list):
        ts = [b.get("type") for b in c]
        if "tool_result" in ts: return "tool_result"
        txt = "".join(b.get("text", "") for b in c if b.get("type") == "text")
    else:
        txt = c or ""
    s = txt.lstrip()
    for tag in ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-caveat>", "<local-command-stderr>", "<task-notification>", "<bash-input>", "<bash-stdout>", "<system-reminder>"):
        if s.startswith(tag): return "wrapper:" + tag
    if s.startswith("[Request interrupted"): return "interrupted:" + s[:40]
    return "genuine:" + ("str" if isinstance(c, str) else "list")
uk = C.Counter(ukind(r) for r in chain if r["type"] == "user")
print("chain user kinds:", dict(uk))
print("all-file user kinds:", dict(C.Counter(ukind(r) for r in recs if r.get("type") == "user")))
for r in chain:
    if r["type"] == "user" and not ukind(r).startswith(("tool_result",)):
        c = content(r); t = c if isinstance(c, str) else " | ".join(b.get("text", "<%s>" % b.get("type")) for b in c)
        print("   user", ukind(r), r["uuid"][:8], r["timestamp"], repr(t[:110]))
A = [r for r in chain if r["type"] == "assistant"]
mids = [r["message"].get("id") for r in A]
print("chain assistant records:", len(A), " distinct message.id:", len(set(mids)))
allA = [r for r in recs if r.get("type") == "assistant"]
print("file assistant records:", len(allA), " distinct message.id:", len({r['message'].get('id') for r in allA}))
print("chain assistant block types:", dict(C.Counter(b.get("type") for r in A for b in (content(r) or []))))
tu = [b for r in A for b in content(r) if b.get("type") == "tool_use"]
tr = [b for r in chain if r["type"] == "user" and isinstance(content(r), list) for b in content(r) if b.get("type") == "tool_result"]
print("chain tool_use blocks:", len(tu), " distinct ids:", len({b["id"] for b in tu}))
print("chain tool_result blocks:", len(tr), " distinct tool_use_id:", len({b["tool_use_id"] for b in tr}), " is_error:", sum(1 for b in tr if b.get("is_error")))
print("tool_use names:", dict(C.Counter(b["name"] for b in tu).most_common()))
trids = {b["tool_use_id"] for b in tr}; tuids = {b["id"] for b in tu}
print("tool_use without result on chain:", [(b["id"], b["name"]) for b in tu if b["id"] not in trids])
print("tool_result without tool_use on chain:", sorted(trids - tuids))
# file-wide
ftu = [b for r in allA for b in (content(r) or []) if b.get("type") == "tool_use"]
ftr = [b for r in recs if r.get("type") == "user" and isinstance(content(r), list) for b in content(r) if b.get("type") == "tool_result"]
print("file tool_use blocks:", len(ftu), " distinct:", len({b['id'] for b in ftu}), " file tool_result blocks:", len(ftr), " distinct:", len({b['tool_use_id'] for b in ftr}))
print("records with toolUseResult:", sum(1 for r in recs if "toolUseResult" in r), " on chain:", sum(1 for r in chain if "toolUseResult" in r))
# replays
tuc = C.Counter(b["id"] for b in ftu); print("tool_use ids in >1 record (file):", {k: v for k, v in tuc.items() if v > 1})
blk = C.Counter((r["message"].get("id"), json.dumps(b, sort_keys=True)) for r in allA for b in (content(r) or []))
print("identical (message.id, block) duplicates (file):", sum(v - 1 for v in blk.values() if v > 1))
trc = C.Counter(b["tool_use_id"] for b in ftr); print("tool_result ids in >1 record (file):", {k: v for k, v in trc.items() if v > 1})
# Grep results without file: prefix
names = {b["id"]: b for b in ftu}
for r in recs:
    if r.get("type") == "user" and isinstance(content(r), list):
        for b in content(r):
            if b.get("type") == "tool_result" and names.get(b["tool_use_id"], {}).get("name") == "Grep":
                c = b.get("content"); t = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c)
                print("   Grep", b["tool_use_id"][-8:], "input=", json.dumps(names[b["tool_use_id"]]["input"])[:140], "-> result", repr(t[:70]), "onchain" if r in chain else "")
# interruptions: tool_result user record between two assistant records with the same message.id (chain order)
def interr(seq):
    n = 0; lastmid = None; pending = False
    for r in seq:
        if r["type"] == "assistant":
            m = r["message"].get("id")
            if pending and m == lastmid: n += 1
            lastmid = m; pending = False
        elif r["type"] == "user" and isinstance(content(r), list) and any(b.get("type") == "tool_result" for b in content(r)):
            pending = True
    return n
print("tool_result between same-message.id assistant records: chain", interr(chain), " file", interr([r for r in recs if r.get("type") in ("user", "assistant", "progress", "system")]))
# same message.id non-contiguous on chain (any record between)
runs = [m for i, m in enumerate(mids) if i == 0 or m != mids[i - 1]]
print("assistant runs on chain (contiguous among assistant recs):", len(runs), "distinct", len(set(runs)))
# usage
U = [r for r in allA if r["message"].get("usage")]
print("file assistant records with usage:", len(U), " distinct message.id with usage:", len({r['message']['id'] for r in U}))
last = {}
for r in U: last[r["message"]["id"]] = r["message"]["usage"]
keys = ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"]
print("file sums over distinct message.id (last record per id):", {k: sum(u.get(k) or 0 for u in last.values()) for k in keys})
lastc = {}
for r in A:
    if r["message"].get("usage"): lastc[r["message"]["id"]] = r["message"]["usage"]
print("chain distinct ids with usage:", len(lastc), " sums:", {k: sum(u.get(k) or 0 for u in lastc.values()) for k in keys})
e5 = sum(1 for r in U if ((r["message"]["usage"].get("cache_creation") or {}).get("ephemeral_5m_input_tokens") or 0) > 0)
e1 = sum(1 for r in U if ((r["message"]["usage"].get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0) > 0)
print("usage records with ephemeral_5m>0:", e5, " ephemeral_1h>0:", e1)
print("models:", dict(C.Counter(r["message"].get("model") for r in allA)))
print("stop_reason:", dict(C.Counter(r["message"].get("stop_reason") for r in allA)))
# compactions
for i, r in enumerate(chain):
    if r.get("subtype") == "compact_boundary":
        print("COMPACT uuid", r["uuid"], r["timestamp"], r.get("compactMetadata"), "logicalParentUuid", r.get("logicalParentUuid"), "file line", recs.index(r) + 1)
        bef, aft = chain[:i], chain[i + 1:]
        print("  chain records before/after:", len(bef), len(aft), " user+assistant before/after:", sum(x["type"] in ("user", "assistant") for x in bef), sum(x["type"] in ("user", "assistant") for x in aft))
        print("  before by type", dict(C.Counter(x["type"] for x in bef)), " after by type", dict(C.Counter(x["type"] for x in aft)))
        pa = [x for x in bef if x["type"] == "assistant" and x["message"].get("usage")][-1]
        u = pa["message"]["usage"]; tot = u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
        print("  last assistant before:", pa["uuid"], pa["message"]["id"], pa["timestamp"], {k: u.get(k) for k in keys}, "in+cr+cc =", tot, " +out =", tot + u["output_tokens"])
        lp = by.get(r.get("logicalParentUuid")); print("  logicalParent record:", lp and (lp["type"], lp.get("subtype"), (lp.get("data") or {}).get("type"), lp["timestamp"]))
        cs = [x for x in aft if x.get("isCompactSummary")]
        for x in cs:
            c = content(x); t = c if isinstance(c, str) else "".join(b.get("text", "") for b in c)
            print("  summary uuid", x["uuid"], "parent", x["parentUuid"], "isVisibleInTranscriptOnly", x.get("isVisibleInTranscriptOnly"), "content type", type(c).__name__, "len chars", len(t))
            print("  first200:", json.dumps(t[:200]))
print("isCompactSummary records in file:", sum(1 for r in recs if r.get("isCompactSummary")))
print("isSidechain:", dict(C.Counter(r.get("isSidechain") for r in recs if "isSidechain" in r)), " agentId values:", dict(C.Counter(r.get("agentId") for r in recs if r.get("agentId"))))
for b in ftu:
    if b["name"] in ("Task", "Agent"): print("  Task/Agent tool_use", b["id"], json.dumps(b["input"])[:200])
for r in recs:
    t = r.get("toolUseResult")
    if isinstance(t, dict) and "agentId" in t: print("  toolUseResult.agentId", t["agentId"], "in record", r["uuid"], [b.get("tool_use_id") for b in content(r) if isinstance(b, dict)])
    if r.get("type") == "progress" and (r.get("data") or {}).get("type") == "agent_progress":
        print("  agent_progress agentId", r["data"].get("agentId"), "parentToolUseID", r.get("parentToolUseID"), "toolUseID", r.get("toolUseID"))
for k in ("cwd", "version", "sessionId", "gitBranch", "slug", "userType"):
    print(k, dict(C.Counter(r.get(k) for r in recs if k in r)))
