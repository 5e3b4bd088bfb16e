import json, sys, collections as C
R = [json.loads(l) for l in open(sys.argv[1])]
P = [r["payload"] for r in R if r["type"] == "response_item"]
calls = [p for p in P if p["type"] in ("function_call", "custom_tool_call")]
outs = [p for p in P if p["type"] in ("function_call_output", "custom_tool_call_output")]
print("calls by (type,name):", dict(C.Counter((p["type"], p["name"]) for p in calls)))
print("distinct call_ids:", len({p["call_id"] for p in calls}), " outputs:", len(outs), " distinct output call_ids:", len({p["call_id"] for p in outs}))
print("calls without output:", [p["call_id"] for p in calls if p["call_id"] not in {o["call_id"] for o in outs}])
print("outputs without call:", [o["call_id"] for o in outs if o["call_id"] not in {p["call_id"] for p in calls}])
print("type pairing ok:", all(o["type"] == {p["call_id"]: p["type"] for p in calls}[o["call_id"]] + "_output" for o in outs))
for p in calls: print("  ", p["type"], p["name"], p["call_id"], (p.get("arguments") or p.get("input"))[:100].replace("\n", "\\n"))
for o in outs:
    out = o["output"]
    try: j = json.loads(out); ec = j.get("metadata", {}).get("exit_code")
    except Exception: j = None; ec = None
    print("  out", o["type"], o["call_id"], "exit_code", ec, repr((j["output"] if j else out)[:70]))
rs = [p for p in P if p["type"] == "reasoning"]
print("reasoning:", len(rs), " with summary text:", sum(1 for p in rs if p.get("summary")), " summary parts:", sum(len(p.get("summary") or []) for p in rs), " encrypted_content:", sum(1 for p in rs if p.get("encrypted_content")), " content non-null:", sum(1 for p in rs if p.get("content")))
tc = [r["payload"] for r in R if r["type"] == "event_msg" and r["payload"]["type"] == "token_count"]
print("token_count:", len(tc), " with info null:", sum(1 for t in tc if t.get("info") is None))
print("last token_count:", json.dumps(tc[-1]))
print("rate_limits present in last:", "rate_limits" in tc[-1])
