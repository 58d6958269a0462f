#!/usr/bin/env python3
"""Synthetic transcript history in the agents' real on-disk formats, at realistic sizes.

    python bench/generate.py --out DIR --turns 100000 --seed 1 [--huge-mb 100] [--tiny-files 150000]

Writes ``DIR/home`` laid out like a user's home directory:

* ``.claude/projects/<project-dir>/<uuid>.jsonl`` — Claude Code 2.1.x records: one content block per
  assistant line, tool_use / tool_result lines with ``toolUseResult``, and the bookkeeping records that
  make up most of a real file's bytes (``attachment``: environment, skill_listing, prompt_snapshot…;
  ``api-request``, ``api-request-blob``, ``api-request-shape``, ``file-history-snapshot``,
  ``queue-operation``, ``last-prompt``, ``system`` turn_duration, ``cost-state``…);
* ``.codex/sessions/YYYY/MM/DD/rollout-….jsonl`` — Codex 0.171 (G3) envelopes with ``ordinal``: a
  ``session_meta`` with ~21 KB of ``base_instructions``, the developer message, the injected
  AGENTS.md/environment_context user message, ``world_state``, ``turn_context``, reasoning, function
  calls and outputs, ``token_usage_record`` and the ``event_msg`` duplicates (``task_started``,
  ``item_completed``, ``token_count``, ``task_complete``…);
* ``.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl`` — Pi 1.x v3 trees: header, model_change,
  thinking_level_change, the ``system`` message, user / assistant (thinking, text, toolCall) /
  toolResult messages, an occasional model_change mid-session.

Sessions have 1..60 turns; user text is 20..600 characters, replies 100..4000, a mix of English prose,
code blocks, paths and CJK sentences. The entities of bench/textpool.py ``PLANTS`` are planted into an
exact, seed-determined set of turns; ``DIR/manifest.json`` records those counts together with turns,
files, bytes and turn-text bytes per agent. Output is byte-identical for the same ``--seed`` and
``--turns`` (whatever ``--jobs``).

``--huge-mb N`` adds one ~N MB session per agent (the newest sessions, unplanted text, 3 to 8 tool calls
per turn; used by the append benchmark). ``--tiny-files N`` writes N minimal one-turn sessions into a separate tree,
``DIR/tiny/home`` (used by the 150k-files no-change sync benchmark), so they do not change the main
corpus.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from textpool import CWDS, NO_MATCH, PLANTS, TextPool, escape

GENERATOR_VERSION = 2
AGENTS = ("claude", "codex", "pi")
SHARES = {"claude": 0.40, "codex": 0.35, "pi": 0.25}
TIMELINE_START_MS = 1_717_200_000_000   # 2024-06-01
TIMELINE_END_MS = 1_795_000_000_000     # 2026-11-18
CJK_SHARE = 0.10
CLAUDE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
TOOL_CALLS = (0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 6)   # per turn, uniform pick
CLAUDE_TOOLS = ("Bash", "Read", "Edit", "Grep", "Write", "Glob")
PI_TOOLS = ("bash", "read", "edit", "write")


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

_ISO_CACHE: dict[int, str] = {}


def iso(ms: int) -> str:
    """Unix ms -> ``2026-11-30T09:45:41.725Z``."""
    seconds, millis = divmod(ms, 1000)
    prefix = _ISO_CACHE.get(seconds)
    if prefix is None:
        t = time.gmtime(seconds)
        prefix = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
                  f"{t.tm_sec:02d}")
        if len(_ISO_CACHE) > 4096:
            _ISO_CACHE.clear()
        _ISO_CACHE[seconds] = prefix
    return f"{prefix}.{millis:03d}Z"


class Ids:
    """Deterministic, cheap, UUID-shaped ids: a random per-session prefix plus a counter."""

    def __init__(self, rng: random.Random) -> None:
        self.base = f"{rng.getrandbits(128):032x}"
        self.n = rng.getrandbits(20)

    def uuid(self) -> str:
        self.n += 1
        b = self.base
        return f"{b[:8]}-{b[8:12]}-4{b[13:16]}-a{b[17:20]}-{self.n:012x}"

    def hex(self, width: int) -> str:
        self.n += 1
        return (self.base + f"{self.n:012x}")[-width:]

    def short(self) -> str:
        self.n += 1
        return f"{(int(self.base[:8], 16) + self.n * 2654435761) & 0xFFFFFFFF:08x}"


def uuid7(rng: random.Random, ms: int) -> str:
    r = f"{rng.getrandbits(80):020x}"
    h = f"{ms:012x}"
    return f"{h[:8]}-{h[8:12]}-7{r[:3]}-{'89ab'[rng.getrandbits(2)]}{r[3:6]}-{r[6:18]}"


def claude_project_dir(cwd: str) -> str:
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


def pi_session_dir(cwd: str) -> str:
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + stripped.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


@dataclass
class Turn:
    user: str
    replies: list[str]        # assistant text parts (the stored reply is "\n".join of the non-empty ones)
    tools: list[tuple[str, str, int]]   # (tool name, command/path, index into pool.outputs), one per call
    ts: int                   # user message time, ms
    thinking: int = -1        # index into pool.thinking, or -1

    @property
    def text_bytes(self) -> int:
        reply = "\n".join(part for part in self.replies if part)
        return len(self.user.encode()) + len(reply.encode())


@dataclass
class SessionSpec:
    agent: str
    index: int
    turns: int
    start_ms: int
    cwd: str
    plants: dict[int, list[tuple[str, str, bool]]] = field(default_factory=dict)  # turn -> (spelling, where, cjk)
    huge_bytes: int = 0
    tiny: bool = False


@dataclass
class SessionResult:
    agent: str
    path: str
    bytes: int
    turns: int
    text_bytes: int
    session_id: str
    cwd: str
    end_ms: int
    huge: bool = False


# ---------------------------------------------------------------------------------------------
# Turn content
# ---------------------------------------------------------------------------------------------

def make_turn(pool: TextPool, rng: random.Random, ts: int, plants: list[tuple[str, str, bool]],
              tool_names: tuple[str, ...], calls: int | None = None) -> Turn:
    user = pool.text(rng, 20, 600, CJK_SHARE)
    final = pool.text(rng, 100, 4000, CJK_SHARE)
    if calls is None:
        calls = rng.choice(TOOL_CALLS)
    tools = []
    replies = []
    for _ in range(calls):
        name = rng.choice(tool_names)
        command = rng.choice(pool.commands) if name.lower() == "bash" else rng.choice(pool.paths)
        tools.append((name, command, rng.randrange(len(pool.outputs))))
        replies.append(f"Let me run `{command}`." if name.lower() == "bash" else f"Let me look at `{command}`.")
    for spelling, where, cjk in plants:
        if where in ("user", "both"):
            user = pool.plant(rng, user, spelling, cjk)
        if where in ("reply", "both"):
            final = pool.plant(rng, final, spelling, cjk)
    replies.append(final)
    thinking = rng.randrange(len(pool.thinking)) if rng.random() < 0.4 else -1
    return Turn(user, replies, tools, ts, thinking)


# ---------------------------------------------------------------------------------------------
# Claude Code 2.1.x
# ---------------------------------------------------------------------------------------------

class ClaudeWriter:
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
            for name in CLAUDE_TOOLS[:4])
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


# ---------------------------------------------------------------------------------------------
# Codex 0.171 (G3)
# ---------------------------------------------------------------------------------------------

class CodexWriter:
    def __init__(self, pool: TextPool, rng: random.Random, spec: SessionSpec) -> None:
        self.pool, self.rng, self.spec = pool, rng, spec
        self.ids = Ids(rng)
        self.thread = uuid7(rng, spec.start_ms)
        self.cwd_json = escape(spec.cwd)
        self.ordinal = 0
        self.sequence = 0
        self.model = rng.choice(("gpt-5.5", "gpt-5.5", "gpt-6.2-sol"))
        self.tokens = 7000

    def _env(self, ts: int, kind: str, payload: str) -> str:
        line = f'{{"timestamp":"{iso(ts)}","ordinal":{self.ordinal},"type":"{kind}","payload":{payload}}}\n'
        self.ordinal += 1
        return line

    def _meta(self) -> str:
        self.sequence += 1
        return (f'"metadata":{{"history_sequence":{self.sequence},"sampled_through_sequence":{self.sequence - 1},'
                f'"client_authored":false,"model_search_state":"unused"}}')

    def header(self, ts: int, tiny: bool = False) -> list[str]:
        b = self.pool.blob_json
        instructions = "" if tiny else f'"base_instructions":{{"text":{b["base_instructions"]},"provenance":' \
                                       f'{{"type":"model","model":"{self.model}"}}}},'
        return [self._env(ts, "session_meta", (
            f'{{"account_scoped":true,"session_id":"{self.thread}","id":"{self.thread}","timestamp":"{iso(ts - 30)}",'
            f'"cwd":{self.cwd_json},"runtime_workspace_roots":[{self.cwd_json}],"originator":"codex_cli_rs",'
            f'"cli_version":"{CODEX_VERSION}","source":"cli","thread_source":"user","model_provider":"openai",'
            f'{instructions}"history_mode":"paginated","context_window":{{"window_id":"{uuid7(self.rng, ts)}"}},'
            f'"git":{{}}}}'))]

    def _task_started(self, ts: int, turn_id: str) -> str:
        return self._env(ts, "event_msg", (
            f'{{"type":"task_started","turn_attribution":{{"turn_id":"{turn_id}","turn_trigger":"user",'
            f'"parent_turn_id":null,"initiating_agent_path":null,"root_turn_id":"{turn_id}"}},"turn_id":"{turn_id}",'
            f'"root_turn_id":"{turn_id}","started_at":{ts // 1000},"model_context_window":258400,'
            f'"collaboration_mode_kind":"default"}}'))

    def _turn_context(self, ts: int, turn_id: str) -> str:
        return self._env(ts, "turn_context", (
            f'{{"turn_id":"{turn_id}","root_turn_id":"{turn_id}","disabled_plugin_ids":[],"cwd":{self.cwd_json},'
            f'"approval_policy":"on-request","approvals_reviewer":"user","permission_profile":{{"type":"workspace"}},'
            f'"model":"{self.model}","comp_hash":"2911","collaboration_mode":{{"mode":"default","settings":'
            f'{{"model":"{self.model}","reasoning_effort":"medium","developer_instructions":null}}}},'
            f'"multi_agent_version":"v1","realtime_active":false,"effort":"medium","summary":"auto",'
            f'"sandbox_policy":{{"type":"workspace-write"}}}}'))

    def _settings(self, ts: int) -> str:
        return self._env(ts, "event_msg", (
            f'{{"type":"thread_settings_applied","thread_id":"{self.thread}","thread_settings":{{"model":'
            f'"{self.model}","model_provider_id":"openai","approval_policy":"on-request","approvals_reviewer":"user",'
            f'"requested_approvals_reviewer":"user","permission_profile":{{"type":"workspace"}},"cwd":{self.cwd_json},'
            f'"runtime_workspace_roots":[{self.cwd_json}],"reasoning_effort":"medium","reasoning_summary":"auto",'
            f'"disabled_plugin_ids":[]}}}}'))

    def _usage(self, ts: int, turn_id: str) -> list[str]:
        self.tokens += self.rng.randint(100, 2000)
        tokens = self.tokens
        usage = (f'{{"input_tokens":{tokens},"cached_input_tokens":{tokens // 2},"cache_write_input_tokens":0,'
                 f'"output_tokens":{tokens // 40},"reasoning_output_tokens":0,"total_tokens":{tokens + tokens // 40}}}')
        return [
            self._env(ts, "token_usage_record", (
                f'{{"thread_id":"{self.thread}","turn_id":"{turn_id}","session_id":"{self.thread}","root_turn_id":'
                f'"{turn_id}","response_id":"resp_{self.ids.hex(24)}","usage":{usage},"turn_token_usage":{usage},'
                f'"thread_token_usage":{usage}}}')),
            self._env(ts + 1, "event_msg", (
                f'{{"type":"token_count","info":{{"total_token_usage":{usage},"last_token_usage":{usage},'
                f'"last_usage_includes_reasoning":false,"model_context_window":258400}},"rate_limits":'
                f'{{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null}}}}')),
        ]

    def turn(self, turn: Turn, first: bool) -> list[str]:
        rng, b = self.rng, self.pool.blob_json
        out: list[str] = []
        ts = turn.ts - rng.randint(20, 80)
        turn_id = uuid7(rng, ts)
        out.append(self._task_started(ts, turn_id))
        if first:
            out.append(self._env(ts + 5, "response_item", (
                f'{{"type":"message","id":"msg_{uuid7(rng, ts)}","role":"developer","content":[{{"type":"input_text",'
                f'"text":"<skills_instructions>\\n## Skills\\n"}},{{"type":"input_text","text":'
                f'{b["developer_skills"]}}}],'
                f'"internal_chat_message_metadata_passthrough":{{"turn_id":"{turn_id}"}}}},{self._meta()}')))
            out.append(self._env(ts + 5, "response_item", (
                f'{{"type":"message","id":"msg_{uuid7(rng, ts)}","role":"user","content":[{{"type":"input_text",'
                f'"text":"# AGENTS.md instructions for {self.spec.cwd}\\n\\n<INSTRUCTIONS>\\n"}},{{"type":"input_text",'
                f'"text":"<environment_context>\\n  <cwd>{self.spec.cwd}</cwd>\\n  <shell>bash</shell>\\n  '
                f'<current_date>{iso(ts)[:10]}</current_date>\\n</environment_context>"}}],'
                f'"internal_chat_message_metadata_passthrough":{{"turn_id":"{turn_id}","content_item_kinds":'
                f'["agents_md.instructions","environments.environment_context"]}}}},{self._meta()}')))
            out.append(self._env(ts + 6, "world_state", (
                f'{{"full":true,"state":{{"agents_md":{{"directory":{self.cwd_json},"text":{b["codex_agents_md"]}}},'
                f'"apps_instructions":false,"collaboration_mode":{{"mode":"default","model":"{self.model}"}},'
                f'"environments":{{"environments":{{"local":{{"cwd":{self.cwd_json},"status":"available","shell":'
                f'"bash"}}}},"current_date":"{iso(ts)[:10]}","timezone":"Etc/UTC"}},"host_skills":{{"body":'
                f'{b["host_skills"]},"includeInstructions":true}},"model":"{self.model}","realtime":'
                f'{{"active":false}},"tools":{{"multi_agent_v1":"Tools for spawning and managing sub-agents."}}}}}}')))
        out.append(self._turn_context(ts + 7, turn_id))
        out.append(self._settings(ts + 7))
        user_json = escape(turn.user)
        message_id = "msg_" + uuid7(rng, turn.ts)
        out.append(self._env(turn.ts, "response_item", (
            f'{{"type":"message","id":"{message_id}","role":"user","content":[{{"type":"input_text","text":'
            f'{user_json}}}],"internal_chat_message_metadata_passthrough":{{"turn_id":"{turn_id}","create_time":'
            f'{turn.ts / 1000:.3f},"content_item_kinds":["user.text"],"content_item_metadata":[{{"provenance":'
            f'{{"type":"user"}}}}]}}}},{self._meta()}')))
        out.append(self._env(turn.ts + 1, "event_msg", (
            f'{{"type":"item_completed","thread_id":"{self.thread}","turn_id":"{turn_id}","item":{{"type":'
            f'"UserMessage","id":"{uuid7(rng, turn.ts)}","content":[{{"type":"text","text":{user_json},'
            f'"text_elements":[]}}]}},"started_at_ms":{turn.ts},"completed_at_ms":{turn.ts + 1}}}')))
        t = turn.ts + 5
        for step in range(len(turn.tools) + 1):
            t += rng.randint(200, 3000)
            reasoning = "rs_" + self.ids.hex(24)
            summary = (f'[{{"type":"summary_text","text":{self.pool.thinking_json[turn.thinking]}}}]'
                       if step == 0 and turn.thinking >= 0 else "[]")
            summary_text = (f'[{self.pool.thinking_json[turn.thinking]}]'
                            if step == 0 and turn.thinking >= 0 else "[]")
            out.append(self._env(t, "event_msg", (
                f'{{"type":"item_completed","thread_id":"{self.thread}","turn_id":"{turn_id}","item":{{"type":'
                f'"Reasoning","id":"{reasoning}","summary_text":{summary_text},"raw_content":[]}},"started_at_ms":'
                f'{t - 5},"completed_at_ms":{t}}}')))
            out.append(self._env(t + 2, "response_item", (
                f'{{"type":"reasoning","id":"{reasoning}","summary":{summary},"content":null,"encrypted_content":'
                f'"gAAAAA{self.ids.hex(32) * rng.randint(2, 16)}","internal_chat_message_metadata_passthrough":'
                f'{{"turn_id":"{turn_id}"}}}},{self._meta()}')))
            text = turn.replies[step]
            if text:
                t += rng.randint(20, 400)
                text_json = escape(text)
                agent_id = "msg_" + self.ids.hex(24)
                out.append(self._env(t, "event_msg", (
                    f'{{"type":"item_completed","thread_id":"{self.thread}","turn_id":"{turn_id}","item":{{"type":'
                    f'"AgentMessage","id":"{agent_id}","content":[{{"type":"Text","text":{text_json}}}]}},'
                    f'"started_at_ms":{t - 30},"completed_at_ms":{t}}}')))
                out.append(self._env(t + 2, "response_item", (
                    f'{{"type":"message","status":"completed","id":"{agent_id}","role":"assistant","content":'
                    f'[{{"type":"output_text","text":{text_json},"annotations":[]}}],'
                    f'"internal_chat_message_metadata_passthrough":{{"turn_id":"{turn_id}","content_item_kinds":'
                    f'["unknown"]}}}},{self._meta()}')))
            if step < len(turn.tools):
                _name, command, output = turn.tools[step]
                call_id = "call_" + self.ids.hex(24)
                command_json = escape(command)
                arguments = escape(json.dumps({"cmd": command}))
                t += rng.randint(20, 300)
                out.append(self._env(t, "response_item", (
                    f'{{"type":"function_call","status":"completed","id":"fc_{self.ids.hex(24)}","name":"exec_command",'
                    f'"arguments":{arguments},"call_id":"{call_id}","internal_chat_message_metadata_passthrough":'
                    f'{{"turn_id":"{turn_id}"}}}},{self._meta()}')))
                out.extend(self._usage(t + 3, turn_id))
                t += rng.randint(30, 5000)
                out_json = self.pool.outputs_json[output]
                code = 1 if rng.random() < 0.08 else 0
                out.append(self._env(t, "event_msg", (
                    f'{{"type":"item_completed","thread_id":"{self.thread}","turn_id":"{turn_id}","item":{{"type":'
                    f'"CommandExecution","id":"{call_id}","process_id":"{rng.randint(100, 99999)}","command":'
                    f'["/bin/bash","-lc",{command_json}],"cwd":{escape("file://" + self.spec.cwd)},"parsed_cmd":'
                    f'[{{"type":"unknown","cmd":{command_json}}}],"source":"unified_exec_startup","status":"completed",'
                    f'"aggregated_output":{out_json},"exit_code":{code},"duration":{{"secs":0,"nanos":'
                    f'{rng.randint(1000, 999999)}}}}},"started_at_ms":{t - 20},"completed_at_ms":{t}}}')))
                header = escape(f"Chunk ID: {self.ids.hex(6)}\nWall time: 0.0{rng.randint(100, 999)} seconds\n"
                                f"Process exited with code {code}\nOutput:\n")
                out.append(self._env(t + 4, "response_item", (
                    f'{{"type":"function_call_output","id":"fco_{uuid7(rng, t)}","call_id":"{call_id}","output":'
                    f'{header[:-1]}{out_json[1:]},"internal_chat_message_metadata_passthrough":{{"turn_id":'
                    f'"{turn_id}"}}}},{self._meta()}')))
        final_json = escape(turn.replies[-1])
        out.extend(self._usage(t + 5, turn_id))
        out.append(self._env(t + 8, "event_msg", (
            f'{{"type":"task_complete","root_turn_id":"{turn_id}","turn_id":"{turn_id}","last_agent_message":'
            f'{final_json},"started_at":{turn.ts // 1000},"completed_at":{t // 1000},"duration_ms":{t - turn.ts},'
            f'"time_to_first_token_ms":{rng.randint(80, 2000)}}}')))
        return out

    def footer(self, ts: int) -> list[str]:
        return []

    def path(self, home: Path) -> Path:
        stamp = iso(self.spec.start_ms)
        day = stamp[:10].split("-")
        name = f"rollout-{stamp[:19].replace(':', '-')}-{self.thread}.jsonl"
        return home / ".codex" / "sessions" / day[0] / day[1] / day[2] / name

    @property
    def session_id(self) -> str:
        return self.thread

    def tiny(self, turn: Turn) -> list[str]:
        turn_id = uuid7(self.rng, turn.ts)
        return [
            self._turn_context(turn.ts - 5, turn_id),
            self._env(turn.ts, "response_item", (
                f'{{"type":"message","id":"msg_{uuid7(self.rng, turn.ts)}","role":"user","content":[{{"type":'
                f'"input_text","text":{escape(turn.user)}}}]}}')),
            self._env(turn.ts + 900, "response_item", (
                f'{{"type":"message","status":"completed","id":"msg_{self.ids.hex(24)}","role":"assistant","content":'
                f'[{{"type":"output_text","text":{escape(turn.replies[-1])},"annotations":[]}}]}}')),
        ]


# ---------------------------------------------------------------------------------------------
# Pi 1.x (v3)
# ---------------------------------------------------------------------------------------------

class PiWriter:
    def __init__(self, pool: TextPool, rng: random.Random, spec: SessionSpec) -> None:
        self.pool, self.rng, self.spec = pool, rng, spec
        self.ids = Ids(rng)
        self.session_id = uuid7(rng, spec.start_ms)
        self.parent = "null"
        self.provider, self.model, self.api = rng.choice((
            ("anthropic", "claude-sonnet-4-5", "anthropic-messages"), ("openai", "gpt-5.5", "openai-responses"),
            ("google", "gemini-3-pro", "google-generative-ai")))
        self.stamp = iso(spec.start_ms)

    def _entry(self, kind: str, ts: int, body: str) -> str:
        entry_id = self.ids.short()
        parent = self.parent
        self.parent = f'"{entry_id}"'
        return f'{{"type":"{kind}","id":"{entry_id}","parentId":{parent},"timestamp":"{iso(ts)}"{body}}}\n'

    def header(self, ts: int, tiny: bool = False) -> list[str]:
        out = [f'{{"type":"session","version":3,"id":"{self.session_id}","timestamp":"{self.stamp}","cwd":'
               f'{escape(self.spec.cwd)}}}\n']
        if tiny:
            return out
        out.append(self._entry("model_change", ts, f',"provider":"{self.provider}","modelId":"{self.model}"'))
        out.append(self._entry("thinking_level_change", ts + 1, ',"thinkingLevel":"medium"'))
        if self.rng.random() < 0.3:
            name = escape(self.rng.choice(self.pool.sentences)[:40])
            out.append(self._entry("session_info", ts + 2, f',"name":{name}'))
        out.append(self._entry("message", ts + 3, (
            f',"message":{{"role":"system","content":"","sections":{{"preamble":"You are a coding assistant running '
            f'inside pi, a coding agent harness.","tools":{self.pool.blob_json["pi_system"]},"rules":"<rules>\\n- Use '
            f'bash for file operations\\n</rules>"}},"toolsAdded":["read","bash","edit","write"],"toolsRemoved":[],'
            f'"timestamp":{ts + 3}}}')))
        return out

    def _assistant(self, ts: int, blocks: list[str], stop: str) -> str:
        rng = self.rng
        tokens_in, tokens_out = rng.randint(50, 90000), rng.randint(10, 4000)
        return self._entry("message", ts, (
            f',"message":{{"role":"assistant","content":[{",".join(blocks)}],"api":"{self.api}","provider":'
            f'"{self.provider}","model":"{self.model}","usage":{{"input":{tokens_in},"output":{tokens_out},'
            f'"cacheRead":0,"cacheWrite":0,"totalTokens":{tokens_in + tokens_out},"cost":{{"input":0.0003,'
            f'"output":0.0014,"cacheRead":0,"cacheWrite":0,"total":0.0017}}}},"stopReason":"{stop}","timestamp":'
            f'{ts - 30},"responseId":"msg_{self.ids.hex(26)}","durationMs":{rng.randint(30, 9000)}}}'))

    def turn(self, turn: Turn, first: bool) -> list[str]:
        rng = self.rng
        out: list[str] = []
        if not first and rng.random() < 0.03:
            self.model = rng.choice(("claude-opus-5-5", "gpt-5.5", "claude-sonnet-4-5"))
            out.append(self._entry("model_change", turn.ts - 10, f',"provider":"{self.provider}","modelId":'
                                                                  f'"{self.model}"'))
        out.append(self._entry("message", turn.ts, (
            f',"message":{{"role":"user","content":[{{"type":"text","text":{escape(turn.user)}}}],"timestamp":'
            f'{turn.ts}}}')))
        t = turn.ts
        for step in range(len(turn.tools) + 1):
            t += rng.randint(300, 6000)
            blocks = []
            if step == 0 and turn.thinking >= 0:
                blocks.append(f'{{"type":"thinking","thinking":{self.pool.thinking_json[turn.thinking]},'
                              f'"thinkingSignature":"{self.ids.hex(40)}"}}')
            if turn.replies[step]:
                blocks.append(f'{{"type":"text","text":{escape(turn.replies[step])}}}')
            last = step == len(turn.tools)
            if not last:
                name, command, output = turn.tools[step]
                call_id = "toolu_" + self.ids.hex(26)
                argument = "command" if name == "bash" else "path"
                blocks.append(f'{{"type":"toolCall","id":"{call_id}","name":"{name}","arguments":{{"{argument}":'
                              f'{escape(command)}}}}}')
            out.append(self._assistant(t, blocks, "stop" if last else "toolUse"))
            if not last:
                t += rng.randint(10, 4000)
                error = "true" if rng.random() < 0.08 else "false"
                out.append(self._entry("message", t, (
                    f',"message":{{"role":"toolResult","toolCallId":"{call_id}","toolName":"{name}","content":'
                    f'[{{"type":"text","text":{self.pool.outputs_json[output]}}}],"isError":{error},"durationMs":'
                    f'{rng.randint(5, 4000)},"timestamp":{t}}}')))
        return out

    def footer(self, ts: int) -> list[str]:
        return []

    def path(self, home: Path) -> Path:
        name = f"{self.stamp.replace(':', '-').replace('.', '-')}_{self.session_id}.jsonl"
        return home / ".pi" / "agent" / "sessions" / pi_session_dir(self.spec.cwd) / name

    def tiny(self, turn: Turn) -> list[str]:
        return [
            self._entry("message", turn.ts, (
                f',"message":{{"role":"user","content":[{{"type":"text","text":{escape(turn.user)}}}],'
                f'"timestamp":{turn.ts}}}')),
            self._assistant(turn.ts + 900, [f'{{"type":"text","text":{escape(turn.replies[-1])}}}'], "stop"),
        ]


WRITERS: dict[str, Any] = {"claude": ClaudeWriter, "codex": CodexWriter, "pi": PiWriter}


# ---------------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------------

_POOL: TextPool | None = None
_SEED = 0


def _init_worker(seed: int) -> None:
    global _POOL, _SEED
    _SEED = seed
    if _POOL is None:
        _POOL = TextPool(seed)


def write_session(args: tuple[SessionSpec, str]) -> SessionResult:
    spec, home_dir = args
    pool = _POOL
    assert pool is not None
    home = Path(home_dir)
    rng = random.Random(f"{_SEED}:{spec.agent}:{'tiny' if spec.tiny else 'main'}:{spec.index}")
    writer = WRITERS[spec.agent](pool, rng, spec)
    tool_names = CLAUDE_TOOLS if spec.agent == "claude" else PI_TOOLS
    path = writer.path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = spec.start_ms
    turns = 0
    text_bytes = 0
    written = 0
    with open(path, "wb", buffering=0) as handle:
        if spec.tiny:
            turn = make_turn(pool, rng, ts, [], tool_names, calls=0)
            turn.user, turn.replies = turn.user[:200].strip() or "ok", [turn.replies[-1][:400].strip() or "ok"]
            lines = writer.header(ts, tiny=True) if spec.agent != "claude" else []
            lines += writer.tiny(turn)
            data = "".join(lines).encode()
            handle.write(data)
            written = len(data)
            turns, text_bytes = 1, turn.text_bytes
        else:
            buffer: list[str] = writer.header(ts)
            size = 0
            while True:
                if spec.huge_bytes:
                    if written + size >= spec.huge_bytes:
                        break
                elif turns >= spec.turns:
                    break
                ts += rng.randint(20_000, 60_000) + int(rng.expovariate(1 / 240_000))
                # Huge sessions are long agentic runs: more tool calls (and output) per turn.
                calls = rng.randint(3, 8) if spec.huge_bytes else None
                turn = make_turn(pool, rng, ts, spec.plants.get(turns, []), tool_names, calls)
                lines = writer.turn(turn, turns == 0)
                buffer.extend(lines)
                size += sum(map(len, lines))
                turns += 1
                text_bytes += turn.text_bytes
                ts = turn.ts + 60_000
                if size >= 4 << 20:
                    data = "".join(buffer).encode()
                    handle.write(data)
                    written += len(data)
                    buffer, size = [], 0
            buffer.extend(writer.footer(ts))
            data = "".join(buffer).encode()
            handle.write(data)
            written += len(data)
    os.utime(path, ns=(ts * 1_000_000, ts * 1_000_000))
    return SessionResult(spec.agent, str(path), written, turns, text_bytes, writer.session_id, spec.cwd, ts,
                         bool(spec.huge_bytes))


def _last_record(path: Path, key: str) -> dict[str, Any]:
    """The last record of a transcript that has ``key`` (read from the end, a window at a time)."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        window = 1 << 16
        while True:
            start = max(0, end - window)
            handle.seek(start)
            lines = handle.read(end - start).split(b"\n")
            for line in reversed(lines[1:] if start else lines):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and key in record:
                        return record
            if start == 0:
                raise ValueError(f"no record with {key!r} in {path}")
            window *= 4


def append_turn(path: Path, agent: str, session_id: str, cwd: str, user: str, reply: str, ts: int,
                pool: TextPool) -> int:
    """Append one complete turn (the user's message, the reply, the agent's bookkeeping for it) to an
    existing session file, as the agent would. Returns the number of bytes written."""
    rng = random.Random(f"append:{path}:{ts}")
    writer = WRITERS[agent](pool, rng, SessionSpec(agent, 0, 1, ts, cwd))
    if agent == "claude":
        writer.set_session(session_id)
        writer.parent = f'"{_last_record(path, "uuid")["uuid"]}"'
    elif agent == "codex":
        writer.thread = session_id
        writer.ordinal = int(_last_record(path, "ordinal")["ordinal"]) + 1
    else:
        writer.session_id = session_id
        writer.parent = f'"{_last_record(path, "parentId")["id"]}"'
    data = "".join(writer.turn(Turn(user, [reply], [], ts), False)).encode()
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def plan_sessions(turns: int, seed: int) -> list[SessionSpec]:
    rng = random.Random(f"{seed}:plan")
    specs: list[SessionSpec] = []
    per_agent = {agent: round(turns * SHARES[agent]) for agent in AGENTS}
    per_agent["pi"] = turns - per_agent["claude"] - per_agent["codex"]
    for agent in AGENTS:
        left = per_agent[agent]
        index = 0
        while left > 0:
            count = min(left, 60, 1 + int(rng.expovariate(1 / 13)))
            start = rng.randrange(TIMELINE_START_MS, TIMELINE_END_MS)
            specs.append(SessionSpec(agent, index, count, start, rng.choice(CWDS)))
            left -= count
            index += 1
    # Planted entities: an exact set of turns each, chosen over the whole corpus.
    starts = list(itertools.accumulate((spec.turns for spec in specs), initial=0))
    for plant in PLANTS:
        count = plant.count or max(1, round(plant.rate * turns))
        variants = plant.variants or (plant.entity,)
        for position in sorted(rng.sample(range(starts[-1]), min(count, starts[-1]))):
            number = bisect.bisect_right(starts, position) - 1
            local = position - starts[number]
            where = rng.choices(("user", "reply", "both"), weights=(4, 5, 1))[0]
            specs[number].plants.setdefault(local, []).append((rng.choice(variants), where, plant.cjk))
    return specs


def planted_counts(specs: list[SessionSpec]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {plant.entity: {"turns": 0, "user": 0, "reply": 0, "both": 0}
                                         for plant in PLANTS}
    by_variant = {}
    for plant in PLANTS:
        for variant in plant.variants or (plant.entity,):
            by_variant[variant] = plant.entity
    for spec in specs:
        for plants in spec.plants.values():
            for spelling, where, _cjk in plants:
                entry = counts[by_variant[spelling]]
                entry["turns"] += 1
                entry[where] += 1
    return counts


def _run(tasks: list[tuple[SessionSpec, str]], jobs: int, seed: int) -> Iterator[SessionResult]:
    if jobs <= 1 or len(tasks) < 64:
        _init_worker(seed)
        yield from map(write_session, tasks)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs, initializer=_init_worker, initargs=(seed,)) as workers:
        yield from workers.imap_unordered(write_session, tasks, chunksize=16)


def generate(out: Path, turns: int, seed: int, huge_mb: int = 0, tiny_files: int = 0, jobs: int = 0,
             quiet: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    jobs = jobs or (os.cpu_count() or 1)
    home = out / "home"
    if home.exists():
        shutil.rmtree(home)
    for root in (home / ".claude" / "projects", home / ".codex" / "sessions", home / ".pi" / "agent" / "sessions"):
        root.mkdir(parents=True, exist_ok=True)
    specs = plan_sessions(turns, seed)
    # Huge sessions: the newest of each agent.
    huge_specs = [SessionSpec(agent, 1_000_000 + number, 0, TIMELINE_END_MS + 3_600_000 * number, CWDS[number],
                              huge_bytes=huge_mb << 20) for number, agent in enumerate(AGENTS)] if huge_mb else []
    _init_worker(seed)   # build the pool before forking
    results: list[SessionResult] = []
    tasks = [(spec, str(home)) for spec in specs + huge_specs]
    # Big sessions first so that the workers finish together.
    tasks.sort(key=lambda task: -(task[0].huge_bytes or task[0].turns * 20_000))
    last_report = time.monotonic()
    for result in _run(tasks, jobs, seed):
        results.append(result)
        if not quiet and time.monotonic() - last_report > 10:
            last_report = time.monotonic()
            done = sum(r.bytes for r in results)
            print(f"generate: {len(results)}/{len(tasks)} files, {done / 1e9:.2f} GB, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    agents: dict[str, dict[str, int]] = {agent: {"files": 0, "turns": 0, "bytes": 0, "text_bytes": 0}
                                         for agent in AGENTS}
    for result in results:
        entry = agents[result.agent]
        entry["files"] += 1
        entry["turns"] += result.turns
        entry["bytes"] += result.bytes
        entry["text_bytes"] += result.text_bytes
    totals = {key: sum(entry[key] for entry in agents.values()) for key in ("files", "turns", "bytes", "text_bytes")}
    huge = [{"agent": r.agent, "path": os.path.relpath(r.path, out), "bytes": r.bytes, "turns": r.turns,
             "session_id": r.session_id, "cwd": r.cwd, "end_ms": r.end_ms}
            for r in sorted(results, key=lambda r: r.agent) if r.huge]
    manifest: dict[str, Any] = {
        "generator": "bench/generate.py", "generator_version": GENERATOR_VERSION, "seed": seed,
        "turns_requested": turns, "huge_mb": huge_mb, "home": "home", "agents": agents, "totals": totals,
        "sessions": len(specs), "huge": huge, "planted": planted_counts(specs), "no_match": NO_MATCH,
        "cwds": list(CWDS),
    }
    if tiny_files:
        manifest["tiny"] = generate_tiny(out, tiny_files, seed, jobs)
    manifest["seconds"] = round(time.monotonic() - started, 1)
    manifest["command"] = " ".join(["python", "bench/generate.py", "--out", str(out), "--turns", str(turns), "--seed",
                                    str(seed)] + (["--huge-mb", str(huge_mb)] if huge_mb else [])
                                   + (["--tiny-files", str(tiny_files)] if tiny_files else []))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def generate_tiny(out: Path, files: int, seed: int, jobs: int) -> dict[str, Any]:
    home = out / "tiny" / "home"
    if home.exists():
        shutil.rmtree(home)
    for root in (home / ".claude" / "projects", home / ".codex" / "sessions", home / ".pi" / "agent" / "sessions"):
        root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{seed}:tiny")
    specs = []
    for number in range(files):
        agent = AGENTS[number % 3]
        # 300 folders per agent, so that no directory holds more than a few hundred sessions
        cwd = f"/home/dev/tiny/p{number % 300:03d}"
        specs.append(SessionSpec(agent, number, 1, rng.randrange(TIMELINE_START_MS, TIMELINE_END_MS), cwd, tiny=True))
    total_bytes = turns = text = 0
    for result in _run([(spec, str(home)) for spec in specs], jobs, seed):
        total_bytes += result.bytes
        turns += result.turns
        text += result.text_bytes
    return {"home": "tiny/home", "files": files, "turns": turns, "bytes": total_bytes, "text_bytes": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output directory (DIR/home, DIR/manifest.json)")
    parser.add_argument("--turns", required=True, type=int, help="turns in the main corpus (before --huge-mb)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--huge-mb", type=int, default=0, help="add one session of about this many MB per agent")
    parser.add_argument("--tiny-files", type=int, default=0, help="also write N one-turn sessions in DIR/tiny/home")
    parser.add_argument("--jobs", type=int, default=0, help="writer processes (default: all cores)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = generate(args.out.resolve(), args.turns, args.seed, args.huge_mb, args.tiny_files, args.jobs)
    totals = manifest["totals"]
    print(f"wrote {totals['turns']} turns in {totals['files']} files, {totals['bytes'] / 1e9:.2f} GB "
          f"({totals['bytes'] / max(1, totals['turns']) / 1024:.1f} KiB/turn, turn text "
          f"{totals['text_bytes'] / 1e6:.1f} MB) in {manifest['seconds']} s -> {args.out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
