"""What the tests (and bench/) share: the bundled histories and their copies, the agents'
environment variables, fresh session ids, a sync that cannot hang the suite, and a JSON-RPC client
for the real language server over stdio.

Imported as ``support`` (tests/ is on ``sys.path`` under pytest; bench/ scripts put it there). The
modules ``env``, ``ids`` and ``jsonrpc`` use the standard library only, so a benchmark can import them
before it decides which pimem to measure; ``history`` and ``sync`` import pimem.
"""
