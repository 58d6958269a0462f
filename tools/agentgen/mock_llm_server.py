#!/usr/bin/env python3
"""Scripted mock LLM server for generating real agent transcripts offline.

Speaks just enough of three wire APIs, with SSE streaming:

  * Anthropic Messages      POST /v1/messages  (+ /v1/messages/count_tokens)
  * OpenAI Responses        POST /v1/responses
  * OpenAI Chat Completions POST /v1/chat/completions
  * Gemini API              POST /v1beta/models/<model>:generateContent, :streamGenerateContent, :countTokens
  * GET /v1/models          (both OpenAI and Anthropic list shapes)

Every request (method, path, selected headers, body) is appended to a JSONL
log so that unsupported endpoints are visible.  Unknown paths get a 404 JSON
error (and are logged).

Behaviour of the scripted "model" (pimem version: see entity_reply() for the
scenario-specific answers that repeat flamingo / zeta_ratelimit / payroll / 缓存 / 锁):
  * The "prompt" is the latest real user text (agent-injected context such as
    <system-reminder>, <environment_context>, AGENTS.md blocks is skipped).
  * Commands to run are taken from the prompt: every `backticked` span that
    follows the word run/execute/运行/执行 (or any backticked span in a prompt
    that says "run"), and "list the files"/"列出" maps to `ls -la`.
  * If there are commands not yet executed since the last real user prompt,
    the reply is a tool call for the next one (using whatever shell tool the
    agent declared: Bash, bash, exec_command, shell_command, shell).
  * Otherwise the reply is text that depends on the prompt (and quotes the
    tool output if tools ran).
  * A "thinking"/reasoning block is added when the prompt contains "think"
    or "思考" and the API/request allows it (Anthropic: honours
    thinking.display="omitted"; Responses: a reasoning item is always added
    when `reasoning` is requested, with a summary only for "think" prompts).
  * A scripted edit (bench/blame): a prompt carrying `[pimem-edit:<base64 JSON>]`, JSON
    {"edits": [{"path", "old", "new", "exists"?, "read"?}]} (old null: write the whole file), becomes the
    agent's own edit tool calls, one per answer, with exactly that text: Claude Code Read then
    Edit/Write, Pi edit/write (read first when it writes over a file that exists, unless "read" is
    false), Codex apply_patch (see edit_plan()).
  * "create file `x`" / 创建文件 -> Write/write tool; "subagent"/子代理 ->
    Claude Code's Agent tool; <task-notification> turns get a report.
  * Summary/compaction prompts (Claude /compact, Codex "CONTEXT CHECKPOINT
    COMPACTION", Pi "context summarization assistant") get a <summary> text.
  * Codex "code mode" models (tools declared in an `additional_tools` input
    item, custom `exec` tool) get a custom_tool_call whose input is JavaScript
    calling tools.exec_command(...).
  * Claude Code's interactive client (generate_corpus.py --agents claude-tui):
    "slowly" -> a long answer streamed slowly (SLOW_DELTAS x SLOW_PACE), so
    that a prompt can be typed while it streams; a bash-mode `<bash-stdout>`
    gets an answer quoting it; a prompt typed mid-turn (wrapped in "The user
    sent a new message while you were working:") is answered as itself; a
    `sleep N` in a sub-agent prompt is run by the sub-agent first.
  * A prompt about earlier work ("didn't we fix ...", "last time we ...",
    "我之前 ...") gets a call of pimem's MCP tool recall_memory, under the name
    the agent gives it in the request's tool list (Claude Code:
    mcp__pimem__recall_memory, loaded through its ToolSearch first; Codex:
    recall_memory in namespace mcp__pimem, found with its tool_search), with the
    `backticked` words of the prompt as entities; then text quoting the result
    (see recall_plan()).
  * CONNECT (only seen when an agent uses this server as HTTP(S)_PROXY) is
    logged and refused: a record of attempted outside traffic.

Binds 127.0.0.1 only.
"""
import argparse
import gzip
import json
import re
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()
LOG_PATH = None
COUNTER = {"n": 0}


def log_request(entry):
    if not LOG_PATH:
        return
    with LOG_LOCK:
        with open(LOG_PATH, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def rid(prefix, n=24):
    return prefix + uuid.uuid4().hex[:n]


CJK_RE = re.compile(r"[\u4e00-\u9fff]")

INJECTED_PREFIXES = (
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<command-name>",
    "<local-command-stdout>",
    "<local-command-caveat>",
    "Caveat:",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skills_instructions>",
    "<collaboration_mode>",
    "<apps_instructions>",
    "<personality",
    "Tool loaded.",  # Claude Code, after a ToolSearch result
)


def is_injected(text):
    t = text.lstrip()
    return any(t.startswith(p) for p in INJECTED_PREFIXES)


# --------------------------------------------------------------------------
# conversation analysis (API independent representation)
#   turns: list of ("user", text) / ("tool_result", text) / ("assistant", text)
# --------------------------------------------------------------------------

# Claude Code (interactive) hands a prompt typed while a tool runs to the model inside the tool-result
# message, wrapped in this text; the wrapped line is the prompt.
MID_TURN_RE = re.compile(r"^The user sent a new message while you were working:\n(.*?)"
                         r"(?:\n\nThis is how Claude Code surfaces|\Z)", re.S)


def analyse(turns):
    """Return (prompt, tool_outputs_since_prompt)."""
    prompt = ""
    idx = -1
    for i in range(len(turns) - 1, -1, -1):
        kind, text = turns[i]
        if kind == "user" and text.strip() and not is_injected(text):
            mid_turn = MID_TURN_RE.match(text.strip())
            prompt = mid_turn.group(1).strip() if mid_turn else text
            idx = i
            break
    outputs = [t for k, t in turns[idx + 1:] if k == "tool_result"] if idx >= 0 else []
    return prompt, outputs


CMD_RE = re.compile(r"`([^`\n]+)`")


def commands_for(prompt):
    p = prompt.lower()
    cmds = []
    if re.search(r"\b(run|execute)\b|运行|执行", p):
        cmds = [c.strip() for c in CMD_RE.findall(prompt) if c.strip()]
    if not cmds and (re.search(r"list (the )?files", p) or "列出" in prompt):
        cmds = ["ls -la"]
    return cmds


def clip(s, n=400):
    s = s.strip()
    return s if len(s) <= n else s[:n] + "\n…"


def entity_reply(prompt):
    """pimem scenarios: text answers that repeat (or introduce) the distinctive words of the prompt,
    so that recall finds them in the user text only, in the reply only, or in both.
    Only used for answers WITHOUT tool output (a tool-output answer never repeats the entity)."""
    p = prompt.lower()
    if "<img" in p and "onerror" in p:
        # deliberately does NOT quote the snippet: the XSS string must stay in one user prompt only
        return ("The description is inserted into the page as raw HTML, so the broken image's `onerror` "
                "handler runs as script. Escape the text before building the markup:\n\n```python\n"
                "import html\n\n\ndef product_page(product):\n"
                "    return '<h1>%s</h1><div>%s</div>' % (html.escape(product.name), "
                "html.escape(product.description))\n```")
    if "ärger" in p or "überschreib" in p:
        return ("Zum Ärger mit dem Überschreiben: the cache writes a price back without comparing versions, "
                "so an older value can overwrite a newer one. "
                + ("Yes, this is the same flamingo bug: invalidate on every price write."
                   if "flamingo" in p else "Compare a version number before every write."))
    if "flamingo" in p:
        return ("About the flamingo bug: the product price cache is keyed by SKU only and is never "
                "invalidated when a price changes, so the flamingo symptom (stale prices) appears right after "
                "a price update. Fix: drop the cache entry in the price-update path.")
    if "cache bug" in p:
        return ("Yes, that is the flamingo bug. It is fixed once the price-update path invalidates the "
                "cache entry; add a regression test for it.")
    if "zeta_ratelimit" in p and re.search(r"\bwrite\b", p) and ("python" in p or "function" in p):
        return ("Here is a small version for the payroll API:\n\n```python\n"
                "def zeta_ratelimit(requests, limit=100):\n"
                "    \"\"\"Allow at most `limit` requests per window.\"\"\"\n"
                "    return requests[:limit]\n```\n\nzeta_ratelimit simply truncates the request list.")
    if "zeta_ratelimit" in p:
        return ("zeta_ratelimit caps the payroll endpoint at 100 requests per minute; extra requests are "
                "dropped before they reach net_pay.")
    if "payroll" in p:
        return ("The payroll service computes net pay as gross * (1 - tax_rate), rounded to cents; the example "
                "uses a 25% tax rate.")
    if CJK_RE.search(prompt) and ("缓存" in prompt or "锁" in prompt):
        return ("关于缓存和锁：多个线程同时写缓存时，旧值可能覆盖新值，所以写缓存之前要先拿到锁"
                "（`with 锁:`），读缓存可以不加锁。缓存失效时也要在锁里删除条目。")
    return None


SLOW_ANSWER = ("Here is the long explanation, streamed slowly. " + " ".join(
    "Step %d: the price cache keeps each product price until the next price update." % n
    for n in range(1, 13)))

BASH_STDOUT_RE = re.compile(r"<bash-stdout>(.*?)</bash-stdout>", re.S)


# pimem's MCP tool: a prompt that refers to earlier work ("didn't we fix ...") is answered with a call
# of the agent's recall_memory tool under whatever name the agent gives it (read from the request's
# tool list; Claude Code defers MCP tools, so the mock first asks its ToolSearch for the tool), then,
# once the tool result is back, with text that quotes it.
RECALL_TRIGGERS = ("didn't we fix", "did we fix", "last time we", "remember when we", "我之前", "上次我们")
RECALL_NAME_RE = re.compile(r"mcp__[A-Za-z0-9_-]+__recall_memory")


def wants_recall(prompt):
    p = (prompt or "").lower()
    return any(t in p for t in RECALL_TRIGGERS)


def recall_tool_name(tool_names):
    for name in tool_names:
        if name == "recall_memory" or name.endswith("__recall_memory"):
            return name
    return None


def recall_entities(prompt):
    spans = [c.strip() for c in CMD_RE.findall(prompt) if c.strip()]
    if spans:
        return spans[:5]
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{5,}", prompt) if w.lower() not in ("before", "didn't")]
    return words[:3] or [prompt.strip()[:20]]


def is_recall_result(text):
    return "turnId" in text or "past turn" in text or "No past conversation" in text


RECALL_SEARCHES = 20         # tool searches before giving up on finding the memory tool
RECALL_SEARCH_PAUSE_S = 0.5  # "thinking" before searching again


def recall_plan(prompt, outputs, tool_names, deferred=()):
    """The recall scenario's next step, or None when the prompt is not about earlier work."""
    if not wants_recall(prompt):
        return None
    done = [o for o in outputs if is_recall_result(o)]
    if done:
        return {"kind": "text", "prompt": prompt,
                "text": "Yes, your memory has it. pimem recall_memory returned:\n\n" + clip(done[-1], 1200)}
    name = recall_tool_name(tool_names)
    if name:
        return {"kind": "tool", "tool": name, "prompt": prompt, "text": "Let me check your past sessions.",
                "args": {"entities": recall_entities(prompt), "limit": 3}}
    # Not listed yet: agents list an MCP server's tools once it has started, and a real model takes
    # seconds to answer, so search (again, after a pause) as long as the budget lasts. Every output
    # since the prompt is a search result here.
    if outputs and len(outputs) < RECALL_SEARCHES:
        time.sleep(RECALL_SEARCH_PAUSE_S)
    if len(outputs) < RECALL_SEARCHES:
        if "ToolSearch" in tool_names:  # Claude Code (its ToolSearch also waits for connecting servers)
            query = "select:" + deferred[0] if deferred else "recall_memory"
            return {"kind": "tool", "tool": "ToolSearch", "prompt": prompt, "text": "Let me find the memory tool.",
                    "args": {"query": query}}
        if "tool_search" in tool_names:  # Codex
            return {"kind": "tool", "tool": "tool_search", "prompt": prompt, "text": "Let me find the memory tool.",
                    "args": {"query": "recall memory past conversations", "limit": 8}}
    return {"kind": "text", "prompt": prompt, "text": "No memory tool is available in this session."}


def answer_text(prompt, outputs, side_task=None):
    """Scripted assistant reply text."""
    if side_task:
        return side_task
    zh = bool(CJK_RE.search(prompt))
    p = prompt.lower()
    if outputs:
        out = outputs[-1]
        if "\nOutput:\n" in out:  # Codex exec_command / code-mode result header
            out = out.split("\nOutput:\n", 1)[1]
        out = re.sub(r"\s*<system-reminder>.*?</system-reminder>\s*", "\n", out, flags=re.S)  # Claude Code extras
        out = clip(out) or "(no output)"
        if zh:
            return ("工具调用已经完成（共 %d 次），最后一次的结果如下：\n\n```\n%s\n```\n\n"
                    "结论：一切正常。" % (len(outputs), out))
        return ("Done: %d tool call(s). The last one returned:\n\n```\n%s\n```\n\n"
                "That looks fine; nothing else to change." % (len(outputs), out))
    if "slowly" in p:
        return SLOW_ANSWER
    bash_mode = BASH_STDOUT_RE.match(prompt.strip())
    if bash_mode:  # Claude Code bash mode (`!cmd`): the model is asked about the command's output
        return ("Your shell command printed:\n\n```\n%s\n```\n\nNothing to fix there."
                % (clip(bash_mode.group(1)) or "(no output)"))
    special = entity_reply(prompt)
    if special:
        return special
    if ("100%" in prompt or "a_b" in prompt or "\\" in prompt) and zh:
        return ("在 SQL 的 `LIKE` 里，`%` 和 `_` 都是通配符：`100%` 要写成 `100\\%`，`a_b` 要写成 `a\\_b`，"
                "并加上 `ESCAPE '\\'`。Windows 路径 `C:\\path\\file` 里的反斜杠也需要转义：\n\n"
                "```sql\nSELECT * FROM 笔记\n WHERE 内容 LIKE '%100\\%%' ESCAPE '\\'\n"
                "    OR 内容 LIKE '%a\\_b%' ESCAPE '\\';\n```")
    if "100%" in prompt or "a_b" in prompt or "\\" in prompt:
        return ("Careful with those characters in SQL `LIKE` patterns: `%` and `_` are wildcards, "
                "so `100%` must be written as `100\\%` and `a_b` as `a\\_b` with `ESCAPE '\\'`. "
                "A Windows path such as `C:\\path\\file` also needs its backslashes doubled:\n\n"
                "```sql\nSELECT * FROM notes\n WHERE body LIKE '%100\\%%' ESCAPE '\\'\n"
                "    OR body LIKE '%a\\_b%' ESCAPE '\\';\n```")
    if "python" in p or "```" in prompt or "function" in p or "函数" in prompt:
        if zh:
            return ("好的，这是一个简单的实现：\n\n```python\ndef slugify(title: str) -> str:\n"
                    "    \"\"\"把标题转换成 URL 友好的 slug。\"\"\"\n"
                    "    return \"-\".join(title.lower().split())\n```\n\n"
                    "它会把空白折叠成单个连字符。")
        return ("Here is a small implementation:\n\n```python\ndef slugify(title: str) -> str:\n"
                "    \"\"\"Turn a title into a URL-friendly slug.\"\"\"\n"
                "    return \"-\".join(title.lower().split())\n```\n\n"
                "It lower-cases the title and joins the words with hyphens.")
    if zh:
        return ("收到：「%s」。\n\n简要回答：这个项目的结构很清晰，建议先补充单元测试，再做重构。"
                % clip(prompt, 60).replace("\n", " "))
    return ("You asked: \"%s\".\n\nShort answer: the project layout looks reasonable. "
            "I would add unit tests first and refactor afterwards." % clip(prompt, 80).replace("\n", " "))


def thinking_text(prompt):
    if CJK_RE.search(prompt):
        return "用户希望我仔细思考。先确认需求，再给出步骤。"
    return "The user wants me to think this through. Check the requirements first, then answer step by step."


def pick_shell_tool(tool_names):
    for name in ("Bash", "bash", "exec_command", "shell_command", "shell", "local_shell", "run_shell_command"):
        if name in tool_names:
            return name
    return None


def shell_args(tool, cmd):
    if tool in ("Bash",):
        return {"command": cmd, "description": "Run " + cmd.split()[0]}
    if tool == "bash":
        return {"command": cmd}
    if tool == "exec_command":
        return {"cmd": cmd}
    if tool == "shell_command":
        return {"command": cmd}
    if tool == "shell":
        return {"command": ["bash", "-lc", cmd]}
    if tool == "run_shell_command":   # Gemini CLI
        return {"command": cmd, "description": "Run " + cmd.split()[0]}
    return {"command": cmd}


def side_task_reply(system_text, tools):
    """Detect agent side requests (titles, summaries, ...) and answer them."""
    s = (system_text or "").lower()
    if "title" in s and not tools:
        return json.dumps({"title": "Mock session title"})
    return None


SUMMARY_MARKERS = ("create a detailed summary of", "context summarization assistant",
                   "context checkpoint compaction",
                   "summarize the conversation", "summary of the conversation so far")

SUMMARY_TEXT = ("<analysis>\nThe user explored the project, ran a few shell commands and asked for code "
                "examples.\n</analysis>\n\n<summary>\n## Goal\nUnderstand the project and get small code "
                "examples.\n\n## Progress\n### Done\n- [x] Listed files and ran the requested commands\n"
                "- [x] Explained LIKE escaping for `100%` and `a_b`\n\n## Next Steps\n1. Add unit tests\n"
                "</summary>")


def is_summary_request(turns, system_text):
    hay = (system_text or "").lower() + "\n" + "\n".join(t for k, t in turns[-3:] if k in ("user", "system")).lower()
    return any(m in hay for m in SUMMARY_MARKERS)


def pick(tool_names, *cands):
    for c in cands:
        if c in tool_names:
            return c
    return None


WRITE_RE = re.compile(r"(?:create|write) (?:a )?file `([^`]+)`|创建文件\s*`([^`]+)`", re.I)


VIEW_RE = re.compile(r"(?:read|show) (?:the )?file `([^`]+)`", re.I)
EDIT_RE = re.compile(r"edit (?:the )?file `([^`]+)`", re.I)


NOTIFY_RE = re.compile(r"<task-notification>.*?(?:<result>(.*?)(?:</result>|$))?", re.S)


EDIT_SCRIPT_RE = re.compile(r"\[pimem-edit:([A-Za-z0-9+/=]+)\]")


def _patch_lines(text, sign):
    return "".join(sign + line + "\n" for line in text.split("\n")[:-1]) if text else ""


def edit_calls(script, tool_names, cwd=None):
    """The tool calls that carry out a scripted edit with the agent's own tools (whole lines:
    every `old`/`new` ends with a newline). Claude Code must Read a file before Edit/Write."""
    calls = []
    for e in script.get("edits", []):
        path, old, new = e["path"], e.get("old"), e["new"]
        if "apply_patch" in tool_names:  # Codex: freeform patch, path as given
            if old is None and not e.get("exists"):
                patch = "*** Add File: %s\n%s" % (path, _patch_lines(new, "+"))
            else:  # lines old and new share at both ends are context (" "), as a model writes them
                a, b = (old or "").split("\n")[:-1], new.split("\n")[:-1]
                head = 0
                while head < min(len(a), len(b)) and a[head] == b[head]:
                    head += 1
                tail = 0
                while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
                    tail += 1
                body = "".join(" %s\n" % x for x in a[:head])
                body += "".join("-%s\n" % x for x in a[head:len(a) - tail])
                body += "".join("+%s\n" % x for x in b[head:len(b) - tail])
                body += "".join(" %s\n" % x for x in a[len(a) - tail:])
                patch = "*** Update File: %s\n@@\n%s" % (path, body)
            calls.append(("apply_patch", {"custom_input": "*** Begin Patch\n" + patch + "*** End Patch\n"}))
        elif "Edit" in tool_names:  # Claude Code: absolute paths
            full = path if path.startswith("/") or not cwd else cwd.rstrip("/") + "/" + path
            if old is not None or e.get("exists"):
                calls.append(("Read", {"file_path": full}))
            if old is None:
                calls.append(("Write", {"file_path": full, "content": new}))
            else:
                calls.append(("Edit", {"file_path": full, "old_string": old, "new_string": new}))
        elif "edit" in tool_names:  # Pi: reads a file it rewrites whole first, as the real agent does,
            # unless the script says it writes without reading ("read": false)
            if old is None:
                if e.get("exists") and e.get("read", True):
                    calls.append(("read", {"path": path}))
                calls.append(("write", {"path": path, "content": new}))
            else:
                calls.append(("edit", {"path": path, "edits": [{"oldText": old, "newText": new}]}))
    return calls


def edit_plan(prompt, outputs, tool_names, cwd=None):
    m = EDIT_SCRIPT_RE.search(prompt or "")
    if not m:
        return None
    import base64
    calls = edit_calls(json.loads(base64.b64decode(m.group(1)).decode("utf-8")), tool_names, cwd)
    if len(outputs) < len(calls):
        tool, args = calls[len(outputs)]
        pl = {"kind": "tool", "tool": tool, "args": args, "prompt": prompt, "text": "I'll make that change."}
        if "custom_input" in args:
            pl["custom_input"], pl["custom_tool"], pl["args"] = args["custom_input"], tool, {}
        return pl
    return {"kind": "text", "prompt": prompt, "text": "Done: %d edit(s) made." % len(calls)}


def plan(turns, tool_names, system_text="", cwd=None, deferred=()):
    """Decide what to answer: dict(kind=text|tool, text, tool, args, prompt)."""
    prompt, outputs = analyse(turns)
    zh = bool(CJK_RE.search(prompt or ""))
    if is_summary_request(turns, system_text):
        return {"kind": "text", "text": SUMMARY_TEXT, "prompt": prompt, "summary": True}
    recall = recall_plan(prompt, outputs, tool_names, deferred)
    if recall:
        return recall
    scripted = edit_plan(prompt, outputs, tool_names, cwd)
    if scripted:
        return scripted
    # background sub-agent finished (Claude Code <task-notification>)
    last_asst = max([i for i, (k, _) in enumerate(turns) if k == "assistant"] or [-1])
    for k, t in turns[last_asst + 1:]:
        if "<task-notification>" in t:
            m = re.search(r"<result>(.*?)(?:</result>|$)", t, re.S)
            res = clip(m.group(1), 300) if m else "(no result text)"
            return {"kind": "text", "prompt": prompt,
                    "text": "The background sub-agent has finished. Its report:\n\n" +
                            "\n".join("> " + x for x in res.splitlines())}
    if outputs and "Async agent launched" in outputs[-1]:
        return {"kind": "text", "prompt": prompt,
                "text": "I started a background sub-agent to explore the repository. "
                        "I'll summarise its findings when it reports back."}
    side = side_task_reply(system_text, tool_names)
    if side:
        return {"kind": "text", "text": side, "prompt": prompt}
    # delegate to a sub-agent (Claude Code "Agent"/"Task" tool)
    agent_tool = pick(tool_names, "Agent", "Task")
    if agent_tool and re.search(r"sub-?agent|子代理", prompt or "", re.I) and not outputs:
        # a `sleep N` in the prompt makes the sub-agent run it first (a slow background task)
        sleep = re.search(r"`(sleep \d+)`", prompt or "")
        task = "List the files in the current directory and report what you find."
        if sleep:
            task = "Please run `%s` and `ls -la`, then report what you find." % sleep.group(1)
        return {"kind": "tool", "tool": agent_tool, "prompt": prompt,
                "text": "I'll delegate this to a sub-agent.",
                "args": {"description": "List project files", "prompt": task,
                         "subagent_type": "general-purpose"}}
    # write a file (Claude Code Write / Pi write)
    m = WRITE_RE.search(prompt or "")
    wtool = pick(tool_names, "Write", "write", "write_file")
    if m and wtool and not outputs:
        fname = m.group(1) or m.group(2)
        if wtool == "Write" and cwd and not fname.startswith("/"):
            fname = cwd.rstrip("/") + "/" + fname
        content = ("# 笔记\n\n- 100% 完成\n- a_b 已测试\n" if zh else
                   "# Notes\n\n- 100% done\n- a_b tested\n- path: C:\\path\\file\n")
        if wtool == "Write":
            args = {"file_path": fname, "content": content}
        elif wtool == "write_file":   # Gemini CLI
            args = {"file_path": fname, "content": content}
        elif "opencode" in (system_text or "").lower():   # OpenCode's write tool takes filePath
            if cwd and not fname.startswith("/"):
                fname = cwd.rstrip("/") + "/" + fname
            args = {"filePath": fname, "content": content}
        else:
            args = {"path": fname, "content": content}
        return {"kind": "tool", "tool": wtool, "args": args, "prompt": prompt,
                "text": ("我来创建 `%s`。" % fname) if zh else ("I'll create `%s`." % fname)}
    # Copilot CLI's file tools (claude-* models): create/view/edit with an absolute `path`
    ctool = pick(tool_names, "create")
    if m and ctool and not outputs:
        content = "# Notes\n\n- 100% done\n- a_b tested\n"
        return {"kind": "tool", "tool": ctool, "args": {"path": m.group(1) or m.group(2), "file_text": content},
                "prompt": prompt, "text": "I'll create `%s`." % (m.group(1) or m.group(2))}
    m = VIEW_RE.search(prompt or "")
    if m and "view" in tool_names and not outputs:
        return {"kind": "tool", "tool": "view", "args": {"path": m.group(1)}, "prompt": prompt,
                "text": "Let me read `%s`." % m.group(1)}
    m = EDIT_RE.search(prompt or "")
    if m and "edit" in tool_names and not outputs:
        return {"kind": "tool", "tool": "edit", "prompt": prompt, "text": "I'll edit `%s`." % m.group(1),
                "args": {"path": m.group(1), "old_str": "100% done", "new_str": "100% done, flamingo checked"}}
    cmds = commands_for(prompt)
    tool = pick_shell_tool(tool_names)
    if tool and len(outputs) < len(cmds):
        cmd = cmds[len(outputs)]
        pre = ("我先运行 `%s`。" % cmd) if CJK_RE.search(prompt) else ("Let me run `%s`." % cmd)
        return {"kind": "tool", "tool": tool, "args": shell_args(tool, cmd), "text": pre, "prompt": prompt}
    return {"kind": "text", "text": answer_text(prompt, outputs), "prompt": prompt,
            "slow": not outputs and "slowly" in (prompt or "").lower()}


def chunks(text, n=3):
    """Split text into a few stream deltas."""
    if not text:
        return []
    step = max(1, len(text) // n + 1)
    return [text[i:i + step] for i in range(0, len(text), step)]


# --------------------------------------------------------------------------
# Anthropic Messages
# --------------------------------------------------------------------------

def anthropic_turns(body):
    turns = []
    for m in body.get("messages", []):
        role = m.get("role")
        content = m.get("content")
        if isinstance(content, str):
            turns.append((role, content))
            continue
        for block in content or []:
            t = block.get("type")
            if t == "text":
                turns.append((role, block.get("text", "")))
            elif t == "tool_result":
                c = block.get("content")
                if isinstance(c, list):
                    c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
                turns.append(("tool_result", c or ""))
    return turns


def anthropic_system_text(body):
    s = body.get("system")
    if isinstance(s, list):
        return "\n".join(b.get("text", "") for b in s if isinstance(b, dict))
    return s or ""


def anthropic_response(body):
    tools = [t.get("name") for t in body.get("tools", []) or [] if isinstance(t, dict)]
    turns = anthropic_turns(body)
    m = re.search(r"Primary working directory: ([^\s\\\"]+)", json.dumps(body.get("messages", []), ensure_ascii=False)
                  + anthropic_system_text(body))
    deferred = sorted(set(RECALL_NAME_RE.findall(json.dumps(body.get("messages", []), ensure_ascii=False))))
    pl = plan(turns, tools, anthropic_system_text(body), cwd=m.group(1) if m else None, deferred=deferred)
    model = body.get("model", "claude-mock")
    blocks = []
    thinking = body.get("thinking") or {}
    if thinking.get("type") in ("enabled", "adaptive") and re.search(r"think|思考", pl["prompt"] or "", re.I) \
            and not any(k == "tool_result" for k, _ in turns[-1:]) and not pl.get("summary"):
        shown = "" if thinking.get("display") == "omitted" else thinking_text(pl["prompt"])
        blocks.append({"type": "thinking", "thinking": shown,
                       "signature": "bW9jay1zaWduYXR1cmU=" + uuid.uuid4().hex})
    if pl["kind"] == "tool":
        blocks.append({"type": "text", "text": pl["text"]})
        blocks.append({"type": "tool_use", "id": rid("toolu_01"), "name": pl["tool"], "input": pl["args"]})
        stop = "tool_use"
    else:
        blocks.append({"type": "text", "text": pl["text"]})
        stop = "end_turn"
    in_tok = max(1, len(json.dumps(body.get("messages", []))) // 4)
    out_tok = max(1, sum(len(json.dumps(b)) for b in blocks) // 4)
    msg = {"id": rid("msg_01"), "type": "message", "role": "assistant", "model": model,
           "content": blocks, "stop_reason": stop, "stop_sequence": None,
           "usage": {"input_tokens": in_tok, "output_tokens": out_tok,
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    return msg, bool(pl.get("slow"))


# A "slowly" answer streams in this many deltas, this many seconds apart (about 10 s): time for a
# driver to type a prompt while a text-only answer is still streaming.
SLOW_DELTAS, SLOW_PACE = 40, 0.25
SLOW_PAUSE = object()  # yielded between slow deltas: send_sse waits instead of sending


def anthropic_sse(msg, slow=False):
    def ev(name, data):
        return ("event: %s\ndata: %s\n\n" % (name, json.dumps(data, ensure_ascii=False))).encode()

    start = dict(msg, content=[], stop_reason=None,
                 usage=dict(msg["usage"], output_tokens=1))
    yield ev("message_start", {"type": "message_start", "message": start})
    yield ev("ping", {"type": "ping"})
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                             "content_block": {"type": "text", "text": ""}})
            for c in chunks(b["text"], SLOW_DELTAS if slow else 3):
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "text_delta", "text": c}})
                if slow:
                    yield SLOW_PAUSE
        elif b["type"] == "thinking":
            yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                             "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for c in chunks(b["thinking"]):
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "thinking_delta", "thinking": c}})
            yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                             "delta": {"type": "signature_delta", "signature": b["signature"]}})
        elif b["type"] == "tool_use":
            yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                             "content_block": {"type": "tool_use", "id": b["id"],
                                                               "name": b["name"], "input": {}}})
            for c in chunks(json.dumps(b["input"], ensure_ascii=False), 2):
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "input_json_delta", "partial_json": c}})
        yield ev("content_block_stop", {"type": "content_block_stop", "index": i})
    yield ev("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                               "usage": {"output_tokens": msg["usage"]["output_tokens"]}})
    yield ev("message_stop", {"type": "message_stop"})


# --------------------------------------------------------------------------
# OpenAI Responses
# --------------------------------------------------------------------------

def responses_turns(body):
    turns = []
    inp = body.get("input")
    if isinstance(inp, str):
        return [("user", inp)]
    for item in inp or []:
        t = item.get("type", "message")
        if t == "message":
            role = item.get("role")
            content = item.get("content")
            if isinstance(content, str):
                turns.append((role if role != "developer" else "system", content))
                continue
            for c in content or []:
                if c.get("type") in ("input_text", "output_text", "text"):
                    turns.append((role if role != "developer" else "system", c.get("text", "")))
        elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            out = item.get("output")
            if isinstance(out, dict):
                out = out.get("content") or json.dumps(out)
            elif isinstance(out, list):
                out = "\n".join(x.get("text", "") for x in out if isinstance(x, dict))
            turns.append(("tool_result", out or ""))
        elif t == "tool_search_output":  # Codex: the tools its tool_search found
            turns.append(("tool_result", "tool_search found: " + ", ".join(
                sorted(responses_tool_types({"tools": item.get("tools")})))))
    return turns


def responses_tool_types(body, namespaces=None):
    """name -> type for top-level tools, namespaced tools, message-anchored
    `additional_tools` input items (Codex "code mode" models declare their
    tools there, as a `functions` namespace holding a custom `exec` tool) and
    the tools of `tool_search_output` items (Codex's deferred MCP tools).
    `namespaces`, when given, is filled with name -> namespace."""
    found = {}

    def walk(tools, namespace=None):
        for t in tools or []:
            if not isinstance(t, dict):
                continue
            if t.get("type") == "namespace":
                walk(t.get("tools"), t.get("name"))
                continue
            name = t.get("name") or (t.get("function") or {}).get("name")
            if t.get("type") in ("local_shell", "tool_search"):
                name = t["type"]
            if name:
                found[name] = t.get("type")
                if namespace and namespaces is not None:
                    namespaces[name] = namespace

    walk(body.get("tools"))
    inp = body.get("input")
    if isinstance(inp, list):
        for item in inp:
            if isinstance(item, dict) and item.get("type") in ("additional_tools", "tool_search_output"):
                walk(item.get("tools"))
    return found


def responses_tool_names(body):
    return list(responses_tool_types(body))


def responses_build(body):
    namespaces = {}
    types = responses_tool_types(body, namespaces)
    names = list(types)
    code_mode = types.get("exec") == "custom" and "exec_command" not in names
    if code_mode:
        names = names + ["exec_command"]  # reachable as tools.exec_command inside `exec`
    pl = plan(responses_turns(body), names, body.get("instructions") or "")
    if code_mode and pl["kind"] == "tool" and pl["tool"] == "exec_command":
        pl["custom_tool"] = "exec"
        pl["custom_input"] = ("const r = await tools.exec_command(%s);\ntext(r.output);"
                              % json.dumps(pl["args"], ensure_ascii=False))
    model = body.get("model", "gpt-mock")
    output = []
    reasoning = body.get("reasoning") or {}
    if reasoning:
        summary = []
        if re.search(r"think|思考", pl["prompt"] or "", re.I) and reasoning.get("summary") not in (None, "none"):
            summary = [{"type": "summary_text", "text": "**Planning the answer**\n\n" + thinking_text(pl["prompt"])}]
        output.append({"type": "reasoning", "id": rid("rs_"), "summary": summary,
                       "encrypted_content": "gAAAAAmock" + uuid.uuid4().hex})
    if pl["kind"] == "tool":
        output.append({"type": "message", "id": rid("msg_"), "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": pl["text"], "annotations": []}]})
        if pl.get("custom_input"):
            output.append({"type": "custom_tool_call", "id": rid("ctc_"), "call_id": rid("call_"),
                           "name": pl["custom_tool"], "input": pl["custom_input"], "status": "completed"})
        elif pl["tool"] == "tool_search":  # Codex's client-side search of its deferred tools
            output.append({"type": "tool_search_call", "id": rid("tsc_"), "call_id": rid("call_"),
                           "execution": "client", "arguments": pl["args"], "status": "completed"})
        else:
            call = {"type": "function_call", "id": rid("fc_"), "call_id": rid("call_"),
                    "name": pl["tool"], "arguments": json.dumps(pl["args"], ensure_ascii=False),
                    "status": "completed"}
            if pl["tool"] in namespaces:  # a tool inside a namespace (Codex: mcp__<server>)
                call["namespace"] = namespaces[pl["tool"]]
            output.append(call)
    else:
        output.append({"type": "message", "id": rid("msg_"), "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": pl["text"], "annotations": []}]})
    in_tok = max(1, len(json.dumps(body.get("input", ""))) // 4)
    out_tok = max(1, len(json.dumps(output)) // 4)
    resp = {"id": rid("resp_"), "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": output,
            "usage": {"input_tokens": in_tok, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": out_tok, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": in_tok + out_tok}}
    return resp


def responses_sse(resp):
    seq = {"n": 0}

    def ev(name, data):
        data = dict(type=name, sequence_number=seq["n"], **data)
        seq["n"] += 1
        return ("event: %s\ndata: %s\n\n" % (name, json.dumps(data, ensure_ascii=False))).encode()

    shell = dict(resp, status="in_progress", output=[], usage=None)
    yield ev("response.created", {"response": shell})
    yield ev("response.in_progress", {"response": shell})
    for oi, item in enumerate(resp["output"]):
        if item["type"] == "message":
            yield ev("response.output_item.added", {"output_index": oi,
                                                    "item": dict(item, status="in_progress", content=[])})
            text = item["content"][0]["text"]
            yield ev("response.content_part.added", {"item_id": item["id"], "output_index": oi, "content_index": 0,
                                                     "part": {"type": "output_text", "text": "", "annotations": []}})
            for c in chunks(text):
                yield ev("response.output_text.delta", {"item_id": item["id"], "output_index": oi,
                                                        "content_index": 0, "delta": c})
            yield ev("response.output_text.done", {"item_id": item["id"], "output_index": oi,
                                                   "content_index": 0, "text": text})
            yield ev("response.content_part.done", {"item_id": item["id"], "output_index": oi, "content_index": 0,
                                                    "part": item["content"][0]})
        elif item["type"] == "function_call":
            yield ev("response.output_item.added", {"output_index": oi,
                                                    "item": dict(item, status="in_progress", arguments="")})
            for c in chunks(item["arguments"], 2):
                yield ev("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": oi,
                                                                    "delta": c})
            yield ev("response.function_call_arguments.done", {"item_id": item["id"], "output_index": oi,
                                                               "arguments": item["arguments"]})
        elif item["type"] == "custom_tool_call":
            yield ev("response.output_item.added", {"output_index": oi,
                                                    "item": dict(item, status="in_progress", input="")})
            for c in chunks(item["input"], 2):
                yield ev("response.custom_tool_call_input.delta", {"item_id": item["id"], "output_index": oi,
                                                                   "delta": c})
            yield ev("response.custom_tool_call_input.done", {"item_id": item["id"], "output_index": oi,
                                                              "input": item["input"]})
        elif item["type"] == "tool_search_call":
            yield ev("response.output_item.added", {"output_index": oi, "item": dict(item, status="in_progress")})
        elif item["type"] == "reasoning":
            yield ev("response.output_item.added", {"output_index": oi,
                                                    "item": dict(item, summary=[])})
            for si, s in enumerate(item["summary"]):
                yield ev("response.reasoning_summary_part.added", {"item_id": item["id"], "output_index": oi,
                                                                   "summary_index": si,
                                                                   "part": {"type": "summary_text", "text": ""}})
                for c in chunks(s["text"]):
                    yield ev("response.reasoning_summary_text.delta", {"item_id": item["id"], "output_index": oi,
                                                                       "summary_index": si, "delta": c})
                yield ev("response.reasoning_summary_text.done", {"item_id": item["id"], "output_index": oi,
                                                                  "summary_index": si, "text": s["text"]})
                yield ev("response.reasoning_summary_part.done", {"item_id": item["id"], "output_index": oi,
                                                                  "summary_index": si, "part": s})
        yield ev("response.output_item.done", {"output_index": oi, "item": item})
    yield ev("response.completed", {"response": resp})


# --------------------------------------------------------------------------
# OpenAI Chat Completions
# --------------------------------------------------------------------------

def chat_turns(body):
    turns = []
    for m in body.get("messages", []):
        role = m.get("role")
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
        if role == "tool":
            turns.append(("tool_result", content or ""))
        else:
            turns.append((role, content or ""))
    return turns


def chat_build(body):
    tools = [((t.get("function") or {}).get("name")) for t in body.get("tools", []) or []]
    system = "\n".join(m.get("content") if isinstance(m.get("content"), str) else ""
                       for m in body.get("messages", []) if m.get("role") in ("system", "developer"))
    pl = plan(chat_turns(body), [t for t in tools if t], system)
    return pl


def chat_sse(body, pl):
    cid = rid("chatcmpl-")
    created = int(time.time())
    model = body.get("model", "gpt-mock")

    def chunk(delta, finish=None, usage=None, choices=True):
        d = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
        if usage is not None:
            d["usage"] = usage
        return ("data: %s\n\n" % json.dumps(d, ensure_ascii=False)).encode()

    yield chunk({"role": "assistant", "content": ""})
    if re.search(r"think|思考", pl["prompt"] or "", re.I) and pl["kind"] == "text":
        for c in chunks(thinking_text(pl["prompt"])):
            yield chunk({"reasoning_content": c})
    for c in chunks(pl["text"]):
        yield chunk({"content": c})
    if pl["kind"] == "tool":
        args = json.dumps(pl["args"], ensure_ascii=False)
        yield chunk({"tool_calls": [{"index": 0, "id": rid("call_"), "type": "function",
                                     "function": {"name": pl["tool"], "arguments": ""}}]})
        for c in chunks(args, 2):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": c}}]})
        yield chunk({}, finish="tool_calls")
    else:
        yield chunk({}, finish="stop")
    in_tok = max(1, len(json.dumps(body.get("messages", []))) // 4)
    out_tok = max(1, len(pl["text"]) // 4)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield chunk(None, usage={"prompt_tokens": in_tok, "completion_tokens": out_tok,
                                 "total_tokens": in_tok + out_tok}, choices=False)
    yield b"data: [DONE]\n\n"


def chat_json(body, pl):
    msg = {"role": "assistant", "content": pl["text"]}
    finish = "stop"
    if pl["kind"] == "tool":
        msg["tool_calls"] = [{"id": rid("call_"), "type": "function",
                              "function": {"name": pl["tool"], "arguments": json.dumps(pl["args"])}}]
        finish = "tool_calls"
    return {"id": rid("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "gpt-mock"),
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}


# --------------------------------------------------------------------------
# Gemini API (generateContent / streamGenerateContent, as Gemini CLI calls it)
# --------------------------------------------------------------------------

def gemini_turns(body):
    turns = []
    for content in body.get("contents", []) or []:
        texts, results = [], []
        for part in content.get("parts", []) or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            if isinstance(part.get("functionResponse"), dict):
                results.append(json.dumps(part["functionResponse"].get("response"), ensure_ascii=False))
        if results:
            turns.extend(("tool_result", r) for r in results)
        elif content.get("role") == "user":
            turns.append(("user", "\n".join(texts)))
        else:
            turns.append(("assistant", "\n".join(texts)))
    return turns


def _schema_value(schema):
    """The smallest value of a JSON schema (Gemini CLI's side requests ask for JSON: next speaker, …)."""
    schema = schema or {}
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        return {k: _schema_value(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return "ok"


def gemini_build(body):
    tools = [d.get("name") for t in body.get("tools", []) or [] for d in (t.get("functionDeclarations") or [])]
    system = "\n".join(p.get("text", "") for p in ((body.get("systemInstruction") or {}).get("parts") or [])
                       if isinstance(p, dict))
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema or config.get("responseMimeType") == "application/json":
        return {"kind": "json", "text": json.dumps(_schema_value(schema)), "prompt": ""}
    return plan(gemini_turns(body), [t for t in tools if t], system)


def gemini_chunks(pl):
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    pieces = list(chunks(pl["text"])) if pl["text"] else []
    out = [{"candidates": [{"content": {"role": "model", "parts": [{"text": c}]}, "index": 0}]} for c in pieces]
    last_parts = []
    if pl["kind"] == "tool":
        last_parts.append({"functionCall": {"name": pl["tool"], "args": pl["args"]}})
    last = {"candidates": [{"content": {"role": "model", "parts": last_parts or [{"text": ""}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": "gemini-mock"}
    return out + [last]


def gemini_json(pl):
    parts = ([{"text": pl["text"]}] if pl["text"] else [])
    if pl["kind"] == "tool":
        parts.append({"functionCall": {"name": pl["tool"], "args": pl["args"]}})
    return {"candidates": [{"content": {"role": "model", "parts": parts or [{"text": ""}]}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-mock"}


def gemini_sse(pl):
    for event in gemini_chunks(pl):
        yield ("data: %s\r\n\r\n" % json.dumps(event, ensure_ascii=False)).encode()


# --------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------

MODELS = ["gpt-5.1-codex-mock", "mock-gpt", "mock-gpt-mini", "claude-sonnet-4-5", "claude-haiku-4-5"]
LOGGED_HEADERS = ("user-agent", "content-type", "accept", "anthropic-version", "anthropic-beta",
                  "x-app", "originator", "session_id", "session-id", "conversation_id", "openai-beta",
                  "x-stainless-package-version", "x-stainless-runtime", "x-stainless-lang",
                  "version", "content-encoding", "x-client-request-id", "x-claude-code-session-id")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-llm/1.0"

    def log_message(self, fmt, *args):  # quiet default logging
        sys.stderr.write("[mock] %s %s\n" % (self.command, self.path))

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        elif enc == "zstd":
            try:
                import zstandard  # optional
                raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            except ImportError:
                pass
        return raw

    def record(self, body_raw, status, note=None):
        COUNTER["n"] += 1
        try:
            body = json.loads(body_raw) if body_raw else None
        except Exception:
            body = {"_raw": body_raw[:2000].decode("utf-8", "replace")}
        entry = {"n": COUNTER["n"], "ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "method": self.command,
                 "path": self.path, "status": status,
                 "headers": {k: v for k, v in self.headers.items() if k.lower() in LOGGED_HEADERS},
                 "body": body}
        if note:
            entry["note"] = note
        log_request(entry)

    def send_json(self, status, obj, extra_headers=None):
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, gen, extra_headers=None):
        """Stream the events of ``gen``; a SLOW_PAUSE item is not sent but waits SLOW_PACE seconds."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        for part in gen:
            if part is SLOW_PAUSE:
                time.sleep(SLOW_PACE)
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            time.sleep(0.005)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # --- methods -----------------------------------------------------------
    def do_GET(self):
        self.read_body()
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            self.record(b"", 200)
            data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "mock",
                     "type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in MODELS]
            return self.send_json(200, {"object": "list", "data": data, "has_more": False,
                                        "first_id": MODELS[0], "last_id": MODELS[-1]})
        if path in ("/", "/health", "/v1", "/v1/"):
            self.record(b"", 200)
            return self.send_json(200, {"ok": True})
        self.record(b"", 404, "unsupported")
        self.send_json(404, {"error": {"type": "not_found_error", "message": "mock: unsupported " + path}})

    def do_HEAD(self):
        self.record(b"", 200)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        raw = self.read_body()
        path = self.path.split("?")[0]
        try:
            body = json.loads(raw) if raw else {}
        except Exception:
            body = {}
        try:
            if path.endswith("/messages/count_tokens"):
                self.record(raw, 200)
                return self.send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            if path.endswith("/messages"):
                self.record(raw, 200)
                msg, slow = anthropic_response(body)
                if body.get("stream"):
                    return self.send_sse(anthropic_sse(msg, slow), {"request-id": rid("req_")})
                return self.send_json(200, msg, {"request-id": rid("req_")})
            if path.endswith("/responses"):
                self.record(raw, 200)
                resp = responses_build(body)
                if body.get("stream", True):
                    return self.send_sse(responses_sse(resp), {"x-request-id": rid("req_")})
                return self.send_json(200, resp)
            if path.endswith(":countTokens"):
                self.record(raw, 200)
                return self.send_json(200, {"totalTokens": max(1, len(raw) // 4)})
            if path.endswith(":streamGenerateContent"):
                self.record(raw, 200)
                return self.send_sse(gemini_sse(gemini_build(body)))
            if path.endswith(":generateContent"):
                self.record(raw, 200)
                return self.send_json(200, gemini_json(gemini_build(body)))
            if path.endswith("/chat/completions"):
                self.record(raw, 200)
                pl = chat_build(body)
                if body.get("stream"):
                    return self.send_sse(chat_sse(body, pl))
                return self.send_json(200, chat_json(body, pl))
        except (BrokenPipeError, ConnectionResetError):
            return
        self.record(raw, 404, "unsupported")
        self.send_json(404, {"error": {"type": "not_found_error", "message": "mock: unsupported " + path}})

    do_PUT = do_POST
    do_PATCH = do_POST

    def do_CONNECT(self):
        """Only reached when an agent is pointed at this server as HTTP(S)_PROXY:
        log which outside host it tried to reach, then refuse the tunnel."""
        self.record(b"", 403, "proxy CONNECT refused (outside traffic attempt)")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_DELETE(self):
        self.read_body()
        self.record(b"", 404, "unsupported")
        self.send_json(404, {"error": {"message": "unsupported"}})


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # clients closing keep-alive sockets when the agent process exits are normal
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    global LOG_PATH
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18765)
    ap.add_argument("--log", default="/tmp/mock-llm-requests.jsonl")
    ap.add_argument("--port-file", default=None, help="write the bound port here once listening")
    a = ap.parse_args()
    LOG_PATH = a.log
    srv = QuietServer(("127.0.0.1", a.port), Handler)  # loopback only
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file, "w") as f:
            f.write(str(port))
    sys.stderr.write("mock LLM listening on http://127.0.0.1:%d (log: %s)\n" % (port, LOG_PATH))
    srv.serve_forever()


if __name__ == "__main__":
    main()
