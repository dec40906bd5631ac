"""Every ```python block of README.md and docs/*.md runs, and shows what it
prints.

The conventions (docs/architecture.md's readers write them, this test reads
them):

- The blocks of one file run in order, in one namespace, as one reader
  would type them into one session; the working directory is a fresh
  temporary folder, and the code is compiled as ``train.py`` (the file name
  the docs' sample messages show).
- ``print(...)  # prints: TEXT`` -- the print writes TEXT.  A block with such
  comments must print exactly those lines, in order.
- A bare fenced block (no language, or ``text``) right after a python block
  is that block's output: what it prints, or, when the text starts with
  ``SomeError:``, the exception it raises (type and message).  Outputs are
  compared with runs of white space made one space, since docs wrap lines.
- ``<!-- doc-setup: CODE -->`` on the line before a block runs CODE first
  (hidden names a fragment relies on, such as ``model`` or ``batches``);
  ``<!-- doc-test: skip REASON -->`` leaves a block out, with a reason.
"""

import contextlib
import io
import pathlib
import re

import pytest

import cygrad

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```([\w+-]*)\s*$")
PRINTS = re.compile(r"#\s*prints:\s*(.*?)\s*$")
SETUP = re.compile(r"^<!--\s*doc-setup:\s*(.*?)\s*-->\s*$", re.S)
SKIP = re.compile(r"^<!--\s*doc-test:\s*skip\b\s*(.*?)\s*-->\s*$")


def blocks(path):
    """[(line, code, setup, skip reason, expected output or None)] of a file."""
    lines = path.read_text().split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not FENCE.match(lines[j]):
            j += 1
        body = "\n".join(lines[i + 1:j])
        i = j + 1
        if lang != "python":
            continue
        before = lines[start - 1] if start else ""
        setup = SETUP.match(before)
        skip = SKIP.match(before)
        output = None
        after = FENCE.match(lines[i]) if i < len(lines) else None
        if after and after.group(1) in ("", "text"):
            k = i + 1
            while k < len(lines) and not FENCE.match(lines[k]):
                k += 1
            output = "\n".join(lines[i + 1:k])
            i = k + 1
        found.append((start + 1, body, setup.group(1) if setup else "",
                      skip.group(1) if skip else None, output))
    return found


def _squash(text):
    return " ".join(text.split())


def run_block(code, setup, output, namespace):
    """Run one block; compare its output with what the docs show."""
    expected = [m.group(1) for m in map(PRINTS.search, code.split("\n")) if m]
    if setup:
        exec(compile(setup, "doc-setup", "exec"), namespace)
    out = io.StringIO()
    raised = None
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, "train.py", "exec"), namespace)
        except Exception as exc:  # compared below with the docs' message
            raised = exc
    if output is not None and re.match(r"^\w+(Error|Exception|Warning):", output):
        assert raised is not None, f"the block should raise {output.split(':')[0]}"
        got = f"{type(raised).__name__}: {raised}"
        assert _squash(got) == _squash(output)
        return
    if raised is not None:
        raise raised
    if expected:
        assert out.getvalue().rstrip("\n").split("\n") == expected
    if output is not None:
        assert _squash(out.getvalue()) == _squash(output)


@pytest.fixture
def clean_state(tmp_path, monkeypatch):
    """A fresh folder, and the settings a block may change put back."""
    monkeypatch.chdir(tmp_path)
    threads = cygrad.get_num_threads()
    dtype = cygrad.get_default_dtype()
    yield
    cygrad.set_num_threads(threads)
    cygrad.set_default_dtype(dtype)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_doc_blocks_run_and_print_what_they_show(path, clean_state):
    namespace = {"__name__": "__doc_blocks__"}
    for line, code, setup, skip, output in blocks(path):
        if skip is not None:
            assert skip, f"{path.name}:{line}: a skipped block must say why"
            continue
        try:
            run_block(code, setup, output, namespace)
        except AssertionError as exc:
            raise AssertionError(f"{path.name}:{line}: {exc}") from None


def test_the_conventions_are_read(tmp_path):
    """The parser finds outputs, setups and skips where the docs put them."""
    text = "\n".join([
        "<!-- doc-setup: a = 2 -->", "```python", "print(a)  # prints: 2", "```",
        "```", "2", "```", "<!-- doc-test: skip needs mpirun -->", "```python",
        "x", "```",
    ])
    path = tmp_path / "conventions.md"
    path.write_text(text)
    found = blocks(path)
    assert [(b[2], b[3], b[4]) for b in found] == [("a = 2", None, "2"),
                                                   ("", "needs mpirun", None)]
    ns = {}
    run_block("print(a)  # prints: 2", "a = 2", "2", ns)
    with pytest.raises(AssertionError):
        run_block("print(3)  # prints: 2", "", None, {})
    run_block("raise ValueError('bad  x')", "", "ValueError: bad x", {})
