"""The Python examples in the README and docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [(doc, k, code) for doc in DOCS
          for k, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S))]


def test_docs_have_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("doc, k, code", BLOCKS, ids=[f"{d.name}-{k}" for d, k, _ in BLOCKS])
def test_python_example_runs(doc, k, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a user's own folder: an example may not lean on the checkout's paths
    exec(compile(code, f"{doc.name}[{k}]", "exec"), {"__name__": "__main__"})  # as `python file.py` runs it


SPECS = ("RULES.md", "FORMATS.md", "DESIGN.md")


@pytest.mark.parametrize("name", SPECS)
def test_the_specifications_ship_with_the_docs(name):
    """docs/spec/ holds the specifications the code cites, identical to the project's own copy."""
    ours = ROOT / "docs" / "spec" / name
    assert ours.read_text().startswith("# ")
    shared = ROOT.parent / "shared" / name  # the project's specifications, beside a checkout
    if shared.exists():
        assert ours.read_text() == shared.read_text(), f"docs/spec/{name} differs from {shared}: copy it again"


def test_relative_links_in_the_docs_resolve():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which does not exist"


def test_code_blocks_name_their_language():
    """Every fenced block says what it holds (python, console, text...), for highlighting and screen readers."""
    for doc in DOCS:
        fences = re.findall(r"^```(.*)$", doc.read_text(), flags=re.M)
        openers = fences[::2]
        assert all(openers), f"{doc.name}: a code block opens with a bare ``` (add python, console, text...)"


def _heading_anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # a '#' comment in a code block is no heading
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_links_to_a_heading_name_one_that_exists():
    for doc in DOCS:
        for target, anchor in re.findall(r"\]\(([^)#:]*)#([^)]+)\)", doc.read_text()):
            linked = doc.parent / target if target else doc
            assert anchor in _heading_anchors(linked), f"{doc.name} links to {target}#{anchor}: no such heading"


def test_cli_reference_lists_every_command_and_option():
    """docs/cli.md (tools/cli_reference.py) covers the parser as it is now."""
    import argparse

    from tools.cli_reference import subcommands
    from train.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    for name, sub in subcommands(build_parser()).items():
        assert f"## `nardy {name}`" in text, f"docs/cli.md lacks nardy {name}: run python tools/cli_reference.py"
        section = text.split(f"## `nardy {name}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert flag in section, f"docs/cli.md: nardy {name} lacks {flag}: run python tools/cli_reference.py"
            if action.help:
                first_words = " ".join(action.help.split()[:3])
                assert first_words in " ".join(section.split()), f"nardy {name}: help of {action.dest} changed"


def test_cli_reference_is_exactly_what_the_generator_writes(monkeypatch):
    """Help text that changed without `python tools/cli_reference.py` fails here, not silently."""
    from tools.cli_reference import TARGET, render

    monkeypatch.setenv("COLUMNS", "100")  # render() sets it; put it back afterwards

    assert TARGET.read_text() == render(), "docs/cli.md is out of date: run python tools/cli_reference.py"


def test_console_examples_print_what_the_docs_show():
    """Each ```console block of the README that runs `nardy moves` shows its real output."""
    import shlex
    import subprocess
    import sys

    blocks = re.findall(r"```console\n\$ (nardy moves [^\n]*)\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert blocks
    for command, shown in blocks:
        args = shlex.split(command)[1:]
        out = subprocess.run([sys.executable, "-m", "train.cli", *args], capture_output=True, text=True,
                             cwd=ROOT, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout == shown, f"README shows another output for {command}"


def test_the_rules_page_has_a_row_for_every_variant_key():
    """A key added to the Rules dataclass (CONTRIBUTING) is documented in docs/rules.md's table."""
    import dataclasses

    from nardy_env import Rules

    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(Rules) if f.init and f"| `{f.name}` |" not in text]
    assert not missing, f"docs/rules.md's table of variant keys lacks {missing}"


def test_the_rules_page_names_every_public_name_of_the_core_and_nothing_else():
    """docs/rules.md's table of the core's names: each exists in nardy_env.__all__, and each of those
    is in the table (a name added to the API is documented, a name removed leaves the docs)."""
    import nardy_env

    text = (ROOT / "docs" / "rules.md").read_text()
    table = text.split("## The core's names at a glance", 1)[1].split("\n## ", 1)[0]
    named = {m for row in table.splitlines() if row.startswith("| `")
             for m in re.findall(r"`([A-Za-z_]\w*)(?:\(|`)", row.split(" | ")[0])}
    public = set(nardy_env.__all__) - {"__version__"}
    assert named - public == set(), "named in docs/rules.md but not in nardy_env.__all__"
    errors = {n for n in public if n.endswith("Error")}
    assert public - errors - named == set(), "in nardy_env.__all__ but not in docs/rules.md's table"
    for name in errors:  # told apart below the table
        assert f"`{name}`" in table and issubclass(getattr(nardy_env, name), ValueError)
