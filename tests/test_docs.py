"""docs/api.md's op reference is the registry, written out: it lists exactly
the registered ops and is what ``tools/gen_api_docs.py`` writes now."""

import pathlib
import re

import cygrad
from tool_loader import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_api_md_lists_exactly_the_registered_ops():
    gen = load_tool("gen_api_docs")
    text = (ROOT / "docs" / "api.md").read_text()
    section = text[text.index(gen.BEGIN):text.index(gen.END)]
    listed = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(cygrad.OPS), (
        "docs/api.md's op reference differs from cygrad.OPS: run "
        "python tools/gen_api_docs.py")
    assert len(listed) == len(set(listed))


def test_api_md_op_reference_is_up_to_date():
    gen = load_tool("gen_api_docs")
    text = (ROOT / "docs" / "api.md").read_text()
    assert gen.splice(text, gen.render(cygrad.OPS)) == text, (
        "docs/api.md's op reference is stale: run python tools/gen_api_docs.py")
