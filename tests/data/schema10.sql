-- A ctxscope database at schema 10, as commit 40fd449 wrote it: three sessions
-- (layered, mock-user, and one switched from layered to masking). The test sets
-- PRAGMA application_id and user_version = 10 after running this script.

CREATE TABLE "session_row" ("id" INTEGER NOT NULL PRIMARY KEY, "title" TEXT NOT NULL, "workspace" TEXT NOT NULL, "provider" TEXT NOT NULL, "model" TEXT NOT NULL, "strategy" TEXT NOT NULL, "todos" TEXT NOT NULL, "created_at" TEXT NOT NULL, "updated_at" TEXT NOT NULL, "parent_session_id" INTEGER, "agent_id" TEXT, "source" TEXT);
CREATE INDEX "session_row_updated_at" ON "session_row" ("updated_at");
CREATE INDEX "session_row_source" ON "session_row" ("source");
CREATE TABLE "summary_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "content" TEXT NOT NULL, "start_time" TEXT, "cutoff_time" TEXT, "first_round" INTEGER NOT NULL, "last_round" INTEGER NOT NULL, "fallback" INTEGER NOT NULL, "tokens" INTEGER, "placement" TEXT NOT NULL, "strategy" TEXT NOT NULL, "active" INTEGER NOT NULL, "created_at" TEXT NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE);
CREATE INDEX "summary_row_session_id" ON "summary_row" ("session_id");
CREATE TABLE "compaction_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "trigger" TEXT NOT NULL, "strategy" TEXT NOT NULL, "focus" TEXT, "tokens_before" INTEGER NOT NULL, "tokens_after" INTEGER NOT NULL, "messages_compacted" INTEGER NOT NULL, "messages_retained" INTEGER NOT NULL, "rounds_compacted" INTEGER NOT NULL, "duration_ms" REAL NOT NULL, "outcome" TEXT NOT NULL, "error" TEXT, "summary_id" INTEGER, "placement" TEXT, "stats" TEXT NOT NULL, "undone_at" TEXT, "fidelity" TEXT, "created_at" TEXT NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE, FOREIGN KEY ("summary_id") REFERENCES "summary_row" ("id") ON DELETE RESTRICT);
CREATE INDEX "compaction_row_session_id" ON "compaction_row" ("session_id");
CREATE INDEX "compaction_row_summary_id" ON "compaction_row" ("summary_id");
CREATE TABLE "lease_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "owner" TEXT NOT NULL, "host" TEXT NOT NULL, "pid" INTEGER NOT NULL, "started" TEXT NOT NULL, "purpose" TEXT NOT NULL, "acquired_at" TEXT NOT NULL, "heartbeat_at" TEXT NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE);
CREATE UNIQUE INDEX "lease_row_session_id" ON "lease_row" ("session_id");
CREATE TABLE "round_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "number" INTEGER NOT NULL, "status" TEXT NOT NULL, "archived" INTEGER NOT NULL, "started_at" TEXT NOT NULL, "finished_at" TEXT, "error" TEXT, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE);
CREATE INDEX "round_row_session_id" ON "round_row" ("session_id");
CREATE UNIQUE INDEX "round_row_session_id_number" ON "round_row" ("session_id", "number");
CREATE TABLE "segment_row" ("id" INTEGER NOT NULL PRIMARY KEY, "compaction_id" INTEGER NOT NULL, "summary_id" INTEGER, "first_round" INTEGER NOT NULL, "last_round" INTEGER NOT NULL, "tokens" INTEGER NOT NULL, FOREIGN KEY ("compaction_id") REFERENCES "compaction_row" ("id") ON DELETE CASCADE, FOREIGN KEY ("summary_id") REFERENCES "summary_row" ("id") ON DELETE RESTRICT);
CREATE INDEX "segment_row_compaction_id" ON "segment_row" ("compaction_id");
CREATE INDEX "segment_row_summary_id" ON "segment_row" ("summary_id");
CREATE TABLE "message_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "round_id" INTEGER NOT NULL, "role" TEXT NOT NULL, "content" TEXT NOT NULL, "tool_calls" TEXT NOT NULL, "meta" TEXT NOT NULL, "tokens" INTEGER, "pinned" INTEGER NOT NULL, "created_at" TEXT NOT NULL, "segment_id" INTEGER, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE, FOREIGN KEY ("round_id") REFERENCES "round_row" ("id") ON DELETE CASCADE, FOREIGN KEY ("segment_id") REFERENCES "segment_row" ("id") ON DELETE RESTRICT);
CREATE INDEX "message_row_session_id" ON "message_row" ("session_id");
CREATE INDEX "message_row_round_id" ON "message_row" ("round_id");
CREATE INDEX "message_row_segment_id" ON "message_row" ("segment_id");
CREATE TABLE "observation_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "message_id" INTEGER, "round_index" INTEGER NOT NULL, "step" INTEGER NOT NULL, "tool_use_id" TEXT NOT NULL, "tool_name" TEXT NOT NULL, "result" TEXT NOT NULL, "text" TEXT NOT NULL, "tokens_full" INTEGER NOT NULL, "tokens_compressed" INTEGER NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE, FOREIGN KEY ("message_id") REFERENCES "message_row" ("id") ON DELETE SET NULL);
CREATE INDEX "observation_row_session_id" ON "observation_row" ("session_id");
CREATE INDEX "observation_row_message_id" ON "observation_row" ("message_id");
CREATE INDEX "observation_row_tool_use_id" ON "observation_row" ("tool_use_id");
CREATE TABLE "strategy_switch_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "previous" TEXT NOT NULL, "strategy" TEXT NOT NULL, "created_at" TEXT NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE);
CREATE INDEX "strategy_switch_row_session_id" ON "strategy_switch_row" ("session_id");
CREATE TABLE "token_count_row" ("id" INTEGER NOT NULL PRIMARY KEY, "digest" TEXT NOT NULL, "tokens" INTEGER NOT NULL);
CREATE UNIQUE INDEX "token_count_row_digest" ON "token_count_row" ("digest");
CREATE TABLE "usage_row" ("id" INTEGER NOT NULL PRIMARY KEY, "session_id" INTEGER NOT NULL, "round_index" INTEGER, "step" INTEGER, "input_tokens" INTEGER NOT NULL, "output_tokens" INTEGER NOT NULL, "cache_read_input_tokens" INTEGER NOT NULL, "cache_creation_input_tokens" INTEGER NOT NULL, "cache_creation_1h_input_tokens" INTEGER NOT NULL, "local_estimate" INTEGER, "source" TEXT NOT NULL, "created_at" TEXT NOT NULL, FOREIGN KEY ("session_id") REFERENCES "session_row" ("id") ON DELETE CASCADE);
CREATE INDEX "usage_row_session_id" ON "usage_row" ("session_id");
CREATE VIRTUAL TABLE archive_fts USING fts5(body, session_id UNINDEXED, segment_id UNINDEXED, message_id UNINDEXED, round UNINDEXED, role UNINDEXED, tool_name UNINDEXED, tokenize = 'porter unicode61');
INSERT INTO "session_row" (id, title, workspace, provider, model, strategy, todos, created_at, updated_at, parent_session_id, agent_id, source) VALUES (1, 'layered session', '/w', '', '', 'layered', '[]', '2026-11-26T01:04:10.281236+00:00', '2026-11-26T01:04:10.281236+00:00', NULL, NULL, NULL);
INSERT INTO "session_row" (id, title, workspace, provider, model, strategy, todos, created_at, updated_at, parent_session_id, agent_id, source) VALUES (2, 'mock-user session', '/w', '', '', 'mock-user', '[]', '2026-11-26T01:04:10.288959+00:00', '2026-11-26T01:04:10.288959+00:00', NULL, NULL, NULL);
INSERT INTO "session_row" (id, title, workspace, provider, model, strategy, todos, created_at, updated_at, parent_session_id, agent_id, source) VALUES (3, 'switched', '/w', '', '', 'masking', '[]', '2026-11-26T01:04:10.289735+00:00', '2026-11-26T01:04:10.291709+00:00', NULL, NULL, NULL);
INSERT INTO "strategy_switch_row" (id, session_id, previous, strategy, created_at) VALUES (1, 3, 'layered', 'masking', '2026-11-26T01:04:10.291334+00:00');
