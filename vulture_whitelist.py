"""Names only a framework uses, so vulture (make lint, [tool.vulture] in pyproject.toml) keeps them.

Each line is an attribute access vulture counts as a use; keep this list short and say who calls what.
"""

# vulture only parses this file: ``_`` stands for any object.
_.report_server_error  # pygls calls it for errors outside a request (PimemServer logs the type only)
_.on_any_event  # watchdog calls it on its FileSystemEventHandler (pimem/watch.py)
_.exc_text  # logging.LogRecord fields the log filter clears (pimem/lsp/runtime.py)
_.stack_info
pi_install  # a pytest fixture requested for its side effect (tests/test_pi_verify_harness.py)
_.intra_op_num_threads  # onnxruntime.SessionOptions fields read by onnxruntime (bench/experiments/semantic_rerank.py)
_.inter_op_num_threads
_.max_seq_length  # sentence-transformers reads it (bench/experiments/semantic_rerank.py)
_.prepare_threshold  # psycopg reads it: no statement prepared on that connection (bench/share_entity_ab.py)
