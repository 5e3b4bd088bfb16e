#!/bin/bash
# Run from tests/data/corpus. Each line: the command, then its output.
cd "$(dirname "$0")/../corpus"
M=marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl
P=moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl
S=moredip__session-share__4b2030ed__subagents__agent-a2018e5.jsonl
Y=yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl
X=yoavf__ai-sessions__codex-pomodor-timer.jsonl
G=yoavf__ai-sessions__gemini-cli-pomodoro-timer.json
O=All-Hands-AI__OpenHands__basic_gui_mode.json
T=SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj
run(){ echo "\$ $1"; eval "$1"; echo; }
run "jq -r .type \$M | sort | uniq -c"
run "jq -r 'select(.type==\"system\").subtype' \$M | sort | uniq -c"
run "jq -r 'select(.type==\"progress\").data.type' \$M | sort | uniq -c"
run "jq -s '[.[]|select(.toolUseResult!=null)]|length' \$M"
run "jq -s '[.[]|select(.type==\"assistant\").message.id]|unique|length' \$M"
run "jq -s '[.[]|select(.type==\"assistant\").message.content[]|select(.type==\"tool_use\").id]|(length, (unique|length))' \$M"
run "jq -s '[.[]|select(.type==\"user\" and (.message.content|type)==\"array\").message.content[]|select(.type==\"tool_result\")]|length' \$M"
run "jq -c 'select(.subtype==\"compact_boundary\")|{uuid,timestamp,parentUuid,logicalParentUuid,compactMetadata}' \$M"
run "jq -r 'select(.isCompactSummary==true).message.content|length' \$M"
run "jq -c 'select(.type==\"assistant\" and .message.id==\"msg_01Gecb8FT9G9F5uN7S6DTJ9p\").message.usage|{input_tokens,cache_read_input_tokens,cache_creation_input_tokens,output_tokens}' \$M | tail -1"
run "jq -r 'select(.type==\"queue-operation\")|[.operation,(.content//\"\"|.[0:50])]|@tsv' \$M"
run "jq -r .type \$P | sort | uniq -c"
run "jq -r '[.type,.isSidechain,.agentId]|@tsv' \$S | sort | uniq -c"
run "jq -r 'select(.toolUseResult.agentId)|[.toolUseResult.agentId, .message.content[0].tool_use_id]|@tsv' \$P"
run "jq -r .type \$Y | sort | uniq -c"
run "jq -r '[.type,(.payload.type//\"-\")]|@tsv' \$X | sort | uniq -c"
run "jq -r 'select(.type==\"response_item\" and .payload.type==\"message\").payload.role' \$X | sort | uniq -c"
run "jq -r 'select(.payload.type==\"function_call\" or .payload.type==\"custom_tool_call\")|.payload.name' \$X | sort | uniq -c"
run "jq -c '[.[]|select(.type==\"event_msg\" and .payload.type==\"token_count\")]|last.payload.info' -s \$X"
run "jq -r '.messages[].type' \$G | sort | uniq -c"
run "jq -r '.messages[].toolCalls[]?|[.name,.status]|@tsv' \$G | sort | uniq -c"
run "jq '[.messages[].thoughts[]?]|length' \$G"
run "jq -r '.[]|[.source,(.action//(\"obs:\"+.observation))]|@tsv' \$O | sort | uniq -c"
run "jq -r '.[]|select(.tool_call_metadata)|[.id,(.cause//\"-\"),(.action//(\"obs:\"+.observation)),.tool_call_metadata.tool_call_id]|@tsv' \$O"
run "jq -r '.history[].role' \$T | sort | uniq -c"
run "jq -r '.trajectory[].action' \$T"
run "jq -c '.info.model_stats' \$T"
run "jq '.trajectory[-1].observation == .info.submission, (.info.submission|length)' \$T"
