"""Tests of what agents get: redaction, the agent tools, `pimem mcp` over the SDK's client, the
install command, and the real Claude Code and Codex against the mock model (docs/mcp.md)."""
