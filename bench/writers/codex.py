"""Codex 0.171 (G3): ``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<thread id>.jsonl`` (docs/formats.md
section 2): envelopes with ``ordinal``, a ``session_meta`` with ~21 KB of base instructions, the developer
message, the injected AGENTS.md/environment user message, ``world_state``, ``turn_context``, reasoning,
function calls and outputs, ``token_usage_record`` and the ``event_msg`` duplicates."""

from __future__ import annotations

import json
import random
from pathlib import Path

from textpool import TextPool, escape

from .common import SHELL_AND_FILE_TOOLS, Ids, SessionSpec, Turn, iso, uuid7

CODEX_VERSION = "0.171.0"


class CodexWriter:
    tools = SHELL_AND_FILE_TOOLS   # written as exec_command calls: only bash (a command) or not (a path) matters

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
