"""Pi 1.x (session format v3): ``~/.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl`` (docs/formats.md
section 3): a tree of entries (header, model_change, thinking_level_change, the ``system`` message,
user / assistant (thinking, text, toolCall) / toolResult messages, an occasional model_change)."""

from __future__ import annotations

import random
from pathlib import Path

from textpool import TextPool, escape

from .common import SHELL_AND_FILE_TOOLS, Ids, SessionSpec, Turn, iso, uuid7


def pi_session_dir(cwd: str) -> str:
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + stripped.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


class PiWriter:
    tools = SHELL_AND_FILE_TOOLS

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
