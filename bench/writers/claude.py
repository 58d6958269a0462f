"""Claude Code 2.1.x: ``~/.claude/projects/<project dir>/<session uuid>.jsonl`` (docs/formats.md section 1):
one content block per assistant line, tool results as user lines with ``toolUseResult``, and the
bookkeeping records that are most of a real file's bytes (attachments, api-request*, queue-operation,
file-history-snapshot, last-prompt, turn_duration, cost-state...)."""

from __future__ import annotations

import random
from pathlib import Path

from textpool import TextPool, escape

from .common import Ids, SessionSpec, Turn, iso

CLAUDE_VERSION = "2.1.332"
TOOLS = ("Bash", "Read", "Edit", "Grep", "Write", "Glob")


def claude_project_dir(cwd: str) -> str:
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


class ClaudeWriter:
    tools = TOOLS

    def __init__(self, pool: TextPool, rng: random.Random, spec: SessionSpec) -> None:
        self.pool, self.rng, self.spec = pool, rng, spec
        self.ids = Ids(rng)
        self.cwd = spec.cwd
        self.cwd_json = escape(spec.cwd)
        self.parent = "null"
        self.model = rng.choice(("claude-opus-5-5", "claude-sonnet-4-5", "claude-opus-5-5"))
        self.set_session(self.ids.uuid())
        self.in_tokens = 2400

    def set_session(self, session_id: str) -> None:
        self.session_id = session_id
        self.tail = (f'"userType":"external","entrypoint":"cli","cwd":{self.cwd_json},'
                     f'"sessionId":"{self.session_id}","version":"{CLAUDE_VERSION}","gitBranch":"main"}}\n')

    def _link(self, uuid: str) -> str:
        parent = self.parent
        self.parent = f'"{uuid}"'
        return parent

    def header(self, ts: int) -> list[str]:
        return [
            f'{{"type":"mode","mode":"normal","sessionId":"{self.session_id}"}}\n',
            f'{{"type":"atis-latch","atis":"","sessionId":"{self.session_id}"}}\n',
        ]

    def session_attachments(self, ts: int) -> list[str]:
        """What Claude Code 2.1.x writes after the first prompt of a session: (attachment, rendered)."""
        b = self.pool.blob_json
        day = iso(ts)[:10]
        return [self._attachment(attachment, ts, rendered) for attachment, rendered in (
            (f'{{"type":"environment","snapshot":{{"workingDirectory":{self.cwd_json},"isWorktree":false,'
             f'"isGitRepo":true,"additionalWorkingDirectories":[],"platform":"linux","shell":"bash",'
             f'"osVersion":"Linux 6.18.44"}}}}', b["environment_short"]),
            (f'{{"type":"model","identity":{{"modelId":"{self.model}","marketingName":"Opus 5.5",'
             f'"knowledgeCutoff":"June 2026"}},"text":"You are powered by the model named Opus 5.5."}}', None),
            (f'{{"type":"deferred_tools_delta","addedNames":["CronCreate","CronDelete","Monitor","WebFetch",'
             f'"WebSearch"],"addedLines":[{b["deferred_tools"]}]}}', None),
            (f'{{"type":"agent_listing_delta","addedTypes":["claude","Explore","general-purpose","Plan"],'
             f'"addedLines":[{b["agent_listing"]}]}}', None),
            (f'{{"type":"skill_listing","content":{b["skill_listing"]},"skillCount":13,"isInitial":true,'
             f'"names":["dataviz","update-config","code-review","simplify"]}}', b["skill_rendered"]),
            ('{"type":"session_context","context":{}}', None),
            (f'{{"type":"date","date":"{day}"}}',
             f'"<system-reminder>\\nToday\'s date is {day}.\\n</system-reminder>"'),
            (self._prompt_snapshot(), None),
        )]

    def _prompt_snapshot(self) -> str:
        b = self.pool.blob_json
        return (f'{{"type":"prompt_snapshot","systemPrompt":[{b["prompt_snapshot_a"]},{b["prompt_snapshot_b"]}],'
                f'"reminderFold":false,"echoWireToolInputs":false,"contextRendering":"announced"}}')

    def _attachment(self, attachment: str, ts: int, rendered: str | None = None) -> str:
        uuid = self.ids.uuid()
        extra = f',"rendered":[{{"content":{rendered}}}],"renderedRole":"system"' if rendered else ""
        return (f'{{"parentUuid":{self._link(uuid)},"isSidechain":false,"attachment":{attachment},'
                f'"type":"attachment","uuid":"{uuid}","timestamp":"{iso(ts)}"{extra},{self.tail}')

    def shape(self, ts: int) -> str:
        b = self.pool.blob_json
        tools = ",".join(
            f'{{"name":"{name}","description":{b["shape_tool"]},"input_schema":{{"type":"object","properties":'
            f'{{"command":{{"type":"string"}},"description":{{"type":"string"}}}}}}}}'
            for name in TOOLS[:4])
        return (f'{{"type":"api-request-shape","sessionId":"{self.session_id}","shapeHash":"{self.pool.hex_json[0]}",'
                f'"timestamp":"{iso(ts)}","version":"{CLAUDE_VERSION}","shape":{{"system":[{{"type":"text","text":'
                f'"You are a Claude agent, built on Anthropic\'s Claude Agent SDK."}},{{"type":"text","text":'
                f'{b["shape_system"]}}}],"tools":[{tools}]}}}}\n')

    def _api_request(self, ts: int, user_json: str) -> list[str]:
        rng, b, hexes = self.rng, self.pool.blob_json, self.pool.hex_json
        request = self.ids.uuid()
        out = [f'{{"type":"api-request-blob","sessionId":"{self.session_id}","hash":"{rng.choice(hexes)}",'
               f'"message":{{"role":"user","content":[{{"type":"text","text":{b["attribution"]}}},'
               f'{{"type":"text","text":{user_json}}}]}}}}\n']
        if rng.random() < 0.1:
            out.append(f'{{"type":"api-request-blob","sessionId":"{self.session_id}","hash":"{rng.choice(hexes)}",'
                       f'"message":{{"role":"system","content":{b["environment"]},"output_config":'
                       f'{{"effort":"medium"}}}}}}\n')
        tail = ",".join(f'"{rng.choice(hexes)}"' for _ in range(rng.randint(3, 8)))
        out.append(
            f'{{"type":"api-request","sessionId":"{self.session_id}","id":"{request}","timestamp":"{iso(ts)}",'
            f'"version":"{CLAUDE_VERSION}","querySource":"repl_main_thread","shapeHash":"{hexes[0]}",'
            f'"params":{{"model":"{self.model}","betas":["claude-code-20250219","interleaved-thinking-2025-05-14",'
            f'"context-management-2025-06-27","effort-2025-11-24"],"max_tokens":128000,"thinking":{{"type":'
            f'"adaptive","display":"omitted"}},"output_config":{{"effort":"medium"}}}},"thread":{{"type":"none"}},'
            f'"echoWireToolInputs":false,"keep":0,"tail":[{tail}],"cacheControl":[{{"path":["system",0],"value":'
            f'{{"type":"ephemeral"}}}}],"requestDigest":"{rng.choice(hexes)}"}}\n')
        return out

    def _assistant(self, ts: int, message_id: str, request_id: str, block: str, stop: str, index: int) -> str:
        uuid = self.ids.uuid()
        self.in_tokens += self.rng.randint(50, 900)
        return (f'{{"parentUuid":{self._link(uuid)},"isSidechain":false,"message":{{"id":"{message_id}",'
                f'"type":"message","role":"assistant","model":"{self.model}","content":[{block}],"stop_reason":'
                f'"{stop}","stop_sequence":null,"usage":{{"input_tokens":{self.in_tokens},'
                f'"cache_creation_input_tokens":0,"cache_read_input_tokens":{self.in_tokens // 2},"output_tokens":'
                f'{self.rng.randint(20, 900)},"output_tokens_details":{{"thinking_tokens":0}},"server_tool_use":'
                f'{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard","cache_creation":'
                f'{{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0}},"inference_geo":"",'
                f'"iterations":[],"speed":"standard","fallback_credit":null}},"stop_details":null}},'
                f'"apiBlockIndex":{index},"requestId":"{request_id}","requestRef":"{self.ids.uuid()}",'
                f'"requestedModel":"{self.model}","promptCacheRequested":"5m","type":"assistant","uuid":"{uuid}",'
                f'"timestamp":"{iso(ts)}","effort":"medium","perTurnEffort":"medium","madeBy":"model",{self.tail}')

    def _tool_result(self, ts: int, tool_id: str, name: str, command: str, output: int, prompt_id: str) -> str:
        uuid = self.ids.uuid()
        source = self.parent.strip('"')
        out_json = self.pool.outputs_json[output]
        error = self.rng.random() < 0.08
        if name == "Bash":
            result = (f'{{"stdout":{out_json},"stderr":"","interrupted":false,"isImage":false,'
                      f'"noOutputExpected":false}}')
        elif name in ("Read", "Grep", "Glob"):
            result = (f'{{"type":"text","file":{{"filePath":{escape(command)},"content":{out_json},'
                      f'"numLines":{out_json.count(chr(92) + "n") + 1},"startLine":1,"totalLines":'
                      f'{out_json.count(chr(92) + "n") + 1}}}}}')
        else:
            result = (f'{{"type":"update","filePath":{escape(command)},"content":{out_json},"structuredPatch":[],'
                      f'"originalFile":null}}')
        return (f'{{"parentUuid":{self._link(uuid)},"isSidechain":false,"promptId":"{prompt_id}","type":"user",'
                f'"message":{{"role":"user","content":[{{"tool_use_id":"{tool_id}","type":"tool_result",'
                f'"content":{out_json},"is_error":{"true" if error else "false"}}}]}},"uuid":"{uuid}",'
                f'"timestamp":"{iso(ts)}","toolUseResult":{result},"sandboxed":false,'
                f'"sourceToolAssistantUUID":"{source}","permissionDecision":{{"decision":"accept","source":"config"}},'
                f'{self.tail}')

    def turn(self, turn: Turn, first: bool) -> list[str]:
        rng, sid = self.rng, self.session_id
        out: list[str] = []
        ts = turn.ts - rng.randint(5, 60)
        user_json = escape(turn.user)
        user_uuid = self.ids.uuid()
        prompt_id = self.ids.uuid()
        out.append(f'{{"type":"queue-operation","operation":"enqueue","timestamp":"{iso(ts)}","sessionId":"{sid}",'
                   f'"content":{user_json}}}\n')
        out.append(f'{{"type":"queue-operation","operation":"dequeue","timestamp":"{iso(ts + 2)}",'
                   f'"sessionId":"{sid}"}}\n')
        backups = ",".join(
            f'{escape(path)}:{{"backupFileName":"{self.ids.hex(16)}@v{rng.randint(1, 9)}","version":'
            f'{rng.randint(1, 9)},"backupTime":"{iso(ts)}"}}'
            for path in rng.sample(self.pool.paths, rng.choice((0, 0, 1, 2, 4, 8))))
        out.append(f'{{"type":"file-history-snapshot","messageId":"{user_uuid}","snapshot":{{"messageId":'
                   f'"{user_uuid}","trackedFileBackups":{{{backups}}},"timestamp":"{iso(ts)}"}},'
                   f'"isSnapshotUpdate":false}}\n')
        out.append(f'{{"parentUuid":{self._link(user_uuid)},"isSidechain":false,"promptId":"{prompt_id}",'
                   f'"type":"user","message":{{"role":"user","content":{user_json}}},"uuid":"{user_uuid}",'
                   f'"timestamp":"{iso(turn.ts)}","permissionMode":"default","promptSource":"user",{self.tail}')
        t = turn.ts + 30
        if first:
            out.extend(self.session_attachments(t))
            out.append(self.shape(t))
        elif rng.random() < 0.12:
            out.append(self._attachment(self._prompt_snapshot(), t))
        elif rng.random() < 0.2:
            out.append(self._attachment('{"type":"total_tokens_reminder","totalTokens":'
                                        f'{self.in_tokens},"limit":1000000}}', t))
        for step in range(len(turn.tools) + 1):
            t += rng.randint(300, 4000)
            out.extend(self._api_request(t, user_json))
            message_id = "msg_" + self.ids.hex(26)
            request_id = "req_" + self.ids.hex(24)
            index = 0
            last = step == len(turn.tools)
            stop = "end_turn" if last else "tool_use"
            if step == 0 and turn.thinking >= 0:
                block = (f'{{"type":"thinking","thinking":{self.pool.thinking_json[turn.thinking]},'
                         f'"signature":"{self.ids.hex(48)}"}}')
                out.append(self._assistant(t, message_id, request_id, block, stop, index))
                index += 1
            text = turn.replies[step]
            if text:
                t += rng.randint(20, 400)
                out.append(self._assistant(t, message_id, request_id, f'{{"type":"text","text":{escape(text)}}}',
                                           stop, index))
                index += 1
            if not last:
                name, command, output = turn.tools[step]
                tool_id = "toolu_" + self.ids.hex(26)
                argument = "command" if name == "Bash" else "file_path"
                block = (f'{{"type":"tool_use","id":"{tool_id}","name":"{name}","input":{{"{argument}":'
                         f'{escape(command)},"description":"Run {name}"}}}}')
                t += rng.randint(20, 400)
                out.append(self._assistant(t, message_id, request_id, block, stop, index))
                t += rng.randint(50, 3000)
                out.append(self._tool_result(t, tool_id, name, command, output, prompt_id))
        out.append(f'{{"type":"last-prompt","lastPrompt":{escape(turn.user[:200])},"leafUuid":'
                   f'{self.parent},"sessionId":"{sid}"}}\n')
        if rng.random() < 0.5:
            uuid = self.ids.uuid()
            out.append(f'{{"parentUuid":{self._link(uuid)},"isSidechain":false,"type":"system","subtype":'
                       f'"turn_duration","durationMs":{t - turn.ts},"isMeta":false,"timestamp":"{iso(t)}",'
                       f'"uuid":"{uuid}",{self.tail}')
        return out

    def footer(self, ts: int) -> list[str]:
        return [f'{{"type":"cost-state","sessionId":"{self.session_id}","totalCostUSD":'
                f'{self.rng.random() * 3:.6f},"totalAPIDuration":{self.rng.randint(1000, 900000)},'
                f'"totalToolDuration":{self.rng.randint(10, 90000)},"totalLinesAdded":{self.rng.randint(0, 900)},'
                f'"totalLinesRemoved":{self.rng.randint(0, 400)},"modelUsage":{{"{self.model}":{{"inputTokens":'
                f'{self.in_tokens},"outputTokens":{self.in_tokens // 20},"costUSD":0.5}}}},'
                f'"hasUnknownModelCost":false}}\n']

    def path(self, home: Path) -> Path:
        return home / ".claude" / "projects" / claude_project_dir(self.cwd) / f"{self.session_id}.jsonl"

    def tiny(self, turn: Turn) -> list[str]:
        user_uuid, reply_uuid = self.ids.uuid(), self.ids.uuid()
        return [
            f'{{"parentUuid":null,"isSidechain":false,"type":"user","message":{{"role":"user","content":'
            f'{escape(turn.user)}}},"uuid":"{user_uuid}","timestamp":"{iso(turn.ts)}",{self.tail}',
            f'{{"parentUuid":"{user_uuid}","isSidechain":false,"message":{{"id":"msg_{self.ids.hex(26)}",'
            f'"type":"message","role":"assistant","model":"{self.model}","content":[{{"type":"text","text":'
            f'{escape(turn.replies[-1])}}}],"stop_reason":"end_turn"}},"type":"assistant","uuid":"{reply_uuid}",'
            f'"timestamp":"{iso(turn.ts + 900)}",{self.tail}',
        ]
