"""cygrad.viz: text tree, DOT text and drawing of the autograd graph."""

import re
import sys
import types

import pytest

import cygrad
from cygrad import nn, viz


def parse_dot(text):
    """{id: label} and the list of (src label, dst label) edges of DOT text."""
    labels = {}
    for m in re.finditer(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"', text, re.MULTILINE):
        labels[m.group(1)] = m.group(2).replace("\\n", "\n")
    edges = [(labels[a], labels[b])
             for a, b in re.findall(r"^\s*(n\d+) -> (n\d+);", text, re.MULTILINE)]
    return labels, edges


def first_line(label):
    return label.split("\n")[0]


def tutorial_graph():
    a = cygrad.tensor(2.0, requires_grad=True)
    b = cygrad.tensor(3.0, requires_grad=True)
    c = a + b
    d = a * b
    e = c * d
    return a, b, e


def test_dot_of_the_tutorial_graph_has_exactly_the_expected_nodes_and_edges():
    a, b, e = tutorial_graph()  # noqa: RUF059 (a, b name the leaves in the DOT)
    text = viz.to_dot(e)
    assert text.startswith("digraph")
    labels, edges = parse_dot(text)
    names = sorted(first_line(v) for v in labels.values())
    assert names == ["AddBackward0", "MulBackward0", "MulBackward0", "a", "b", "e"]
    assert len(labels) == 6
    # Leaves carry shape and dtype; the output its shape.
    leaf_a = next(v for v in labels.values() if first_line(v) == "a")
    assert "() float32" in leaf_a
    ids = {v: k for k, v in labels.items()}
    root_mul = next(v for v in labels.values() if first_line(v) == "MulBackward0"
                    and (v, next(x for x in labels.values() if first_line(x) == "e"))
                    in edges)
    other_mul = next(v for v in labels.values() if first_line(v) == "MulBackward0"
                     and v is not root_mul and ids[v] != ids[root_mul])
    add = next(v for v in labels.values() if first_line(v) == "AddBackward0")
    out = next(v for v in labels.values() if first_line(v) == "e")
    leaf_b = next(v for v in labels.values() if first_line(v) == "b")
    expected = sorted([
        (add, root_mul), (other_mul, root_mul), (root_mul, out),
        (leaf_a, add), (leaf_b, add), (leaf_a, other_mul), (leaf_b, other_mul),
    ])
    assert sorted(edges) == expected


def test_dot_shows_saved_tensors_then_freed_after_backward():
    a, b, e = tutorial_graph()  # noqa: RUF059 (a, b name the leaves in the DOT)
    before = viz.to_dot(e)
    assert "saved: self () 4 B, other () 4 B" in before
    e.backward()
    after = viz.to_dot(e)
    labels, edges = parse_dot(after)
    assert len(labels) == 6 and len(edges) == 7
    assert "saved: freed by backward" in after
    assert "saved: self" not in after


def test_dot_labels_leaves_from_names_and_escapes():
    model = nn.Linear(2, 1)
    out = model(cygrad.randn(3, 2)).sum()
    labels, _ = parse_dot(viz.to_dot(out, names=model))
    firsts = {first_line(v) for v in labels.values()}
    assert {"weight", "bias", "SumBackward0"} <= firsts
    labels, _ = parse_dot(viz.to_dot(out, names={'w"1': model.weight}))
    assert 'w\\"1' in {first_line(v) for v in labels.values()}


def test_tree_of_a_small_mlp():
    cygrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x = cygrad.randn(5, 4)
    loss = model(x).pow(2).sum()  # <- forward
    text = viz.tree(loss)
    lines = text.splitlines()
    assert lines[0] == "loss: tensor () float32"
    body = [re.sub(r"^[\s│├└─]+", "", s) for s in lines[1:]]
    kinds = [s.split()[0] for s in body]
    # Expected order: a plain recursive walk of the public next_functions
    # (the Linear layer's own node names belong to cygrad.nn, not to viz).
    names = {id(p): f"model.{n}" for n, p in model.named_parameters()}

    def walk(node, depth=0):
        if node.name() == "AccumulateGrad":
            return [names[id(node.variable)]]
        out = [node.name()]
        for child, _ in node.next_functions:
            if child is not None:
                out += walk(child, depth + 1)
        return out

    assert kinds == walk(loss.grad_fn)
    assert kinds[:2] == ["SumBackward0", "PowBackward0"] and "ReluBackward0" in kinds
    assert sorted(k for k in kinds if k.startswith("model.")) == [
        "model.0.bias", "model.0.weight", "model.2.bias", "model.2.weight"]
    with open(__file__) as f:
        src = f.read().splitlines()
    line = next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# <- forward"))
    assert f"@ test_viz.py:{line}" in lines[1]
    assert "model.0.weight  leaf (8, 4) float32" in text
    assert "[saved: result (5, 8) 160 B]" in text      # relu saves its output
    assert lines[2].startswith("    └── PowBackward0")
    loss.backward()
    assert "[saved: freed by backward]" in viz.tree(loss)


def test_tree_prints_a_shared_node_once():
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    y = h * h + h
    text = viz.tree(y)
    assert text.count("ExpBackward0") == 3
    assert text.count("(shown above)") == 2


def test_tree_of_tensors_without_graph():
    x = cygrad.tensor([1.0], requires_grad=True)
    assert viz.tree(x) == "x: tensor (1,) float32\n└── x  leaf (1,) float32"
    z = cygrad.ones(2)
    assert viz.tree(z).endswith("(no graph: does not require grad)")
    labels, edges = parse_dot(viz.to_dot(z))
    assert len(labels) == 1 and edges == []


def test_deep_chain_does_not_recurse():
    x = cygrad.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    labels, edges = parse_dot(viz.to_dot(y))
    assert len(labels) == 3002 and len(edges) == 3001
    text = viz.tree(y, max_depth=10)
    assert "deeper than max_depth=10" in text
    assert len(viz.tree(y, max_depth=5000).splitlines()) == 3002


def test_draw_without_graphviz_says_what_to_install(monkeypatch):
    _, _, e = tutorial_graph()
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError) as ei:
        viz.draw(e, "graph.svg")
    msg = str(ei.value)
    assert "pip install graphviz" in msg and "to_dot" in msg


def test_draw_renders_through_graphviz(monkeypatch, tmp_path):
    calls = []

    class Source:
        def __init__(self, source):
            calls.append(source)

        def render(self, outfile, format, cleanup):
            calls.append((outfile, format, cleanup))
            with open(outfile, "w") as f:
                f.write("<svg/>")

    fake = types.ModuleType("graphviz")
    fake.Source = Source
    fake.ExecutableNotFound = type("ExecutableNotFound", (RuntimeError,), {})
    monkeypatch.setitem(sys.modules, "graphviz", fake)
    _, _, e = tutorial_graph()
    e.backward()                         # still drawable after backward
    path = str(tmp_path / "graph.svg")
    assert viz.draw(e, path) == path
    assert calls[0].startswith("digraph") and "MulBackward0" in calls[0]
    assert calls[1] == (path, "svg", True)


def test_draw_reports_a_missing_dot_program(monkeypatch, tmp_path):
    fake = types.ModuleType("graphviz")
    fake.ExecutableNotFound = type("ExecutableNotFound", (RuntimeError,), {})

    class Source:
        def __init__(self, source):
            pass

        def render(self, **kw):
            raise fake.ExecutableNotFound("dot not found")

    fake.Source = Source
    monkeypatch.setitem(sys.modules, "graphviz", fake)
    _, _, e = tutorial_graph()
    with pytest.raises(RuntimeError, match="Graphviz `dot` program"):
        viz.draw(e, str(tmp_path / "g.png"))
