"""The Python examples in the README and docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [(doc, k, code) for doc in DOCS
          for k, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S))]


def test_docs_have_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("doc, k, code", BLOCKS, ids=[f"{d.name}-{k}" for d, k, _ in BLOCKS])
def test_python_example_runs(doc, k, code, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"{doc.name}[{k}]", "exec"), {"__name__": "__docs__"})
