"""``add_graph``: a TensorBoard ``GraphDef`` read off the autograd graph of
one forward pass (cygrad has no tracer to record a program, as torch's JIT
does).

The model runs once, in eval mode, with grad enabled and each floating-point
input replaced by a detached copy that requires grad, so that the ops on the
inputs are recorded too (the caller's tensors are left alone). Then:

- **Nodes.** Every ``grad_fn`` reachable from the outputs is an op node
  named after it (``AddmmBackward0``, ``ReluBackward0``); each leaf is a node
  of its own: the model's inputs (``input/<forward's argument name>``), its
  parameters (``<module scope>/<name>``, op ``Parameter``) and any other
  tensor that requires grad (op ``Leaf``). ``output/output.<i>`` nodes end
  the graph. Edges follow the data, input to consumer (``next_functions``
  reversed), ``name:k`` for output ``k`` of a many-output op.
- **Scopes.** Forward hooks on every submodule give each op the innermost
  module that ran it, named as torch's graphs are: ``Net/Sequential[body]/
  Linear[0]``. After a module's call, the ops reachable from its outputs
  without passing its inputs, and not already claimed by a submodule, are
  its own. (An op that reaches the module through a tensor it did not get
  as an argument, such as one its parent stored on it, is counted as the
  module's.)
- **Shapes.** One backward pass (``autograd.grad``, which leaves ``.grad``
  alone) with a pre-hook on every node reads each op's output shapes off
  the gradients it receives. An op whose backward is missing only loses
  its shapes.

Ops that autograd does not record are not drawn: ops under ``no_grad``, and
integer-valued work that never meets a parameter or a float input.
"""

import inspect

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from cygrad._kernels.engine import TensorBase
from cygrad.autograd.backprop import grad as _autograd_grad
from cygrad.autograd.grad_mode import enable_grad
from cygrad.creation import ones_like

__all__ = ["graph"]


def _tensors(obj):
    """The tensors in ``obj`` (nested tuples, lists and dict values), in order."""
    out, stack = [], [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, TensorBase):
            out.append(x)
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
    return out


def _children(node):
    return [child for child, _ in node.next_functions if child is not None]


def _is_leaf_sink(node):
    return node.name() == "AccumulateGrad"


def _shape_proto(shape):
    if shape is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(n)) for n in shape])


def _argument_names(model, n):
    """Names for ``n`` positional inputs: forward's parameter names, else
    ``input.<i>``."""
    fn = getattr(model, "forward", model)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) < n or len(set(names[:n])) < n:
        return [f"input.{i + 1}" for i in range(n)]
    return names[:n]


class _Scopes:
    """Which module call made each node, from forward hooks on every module."""

    def __init__(self, model):
        self.root = type(model).__name__ if hasattr(model, "named_modules") else \
            getattr(model, "__name__", type(model).__name__)
        self.scope = {}             # module path -> "Net/Linear[fc1]"
        self.owner = {}             # id(node) -> (node, scope)
        self._stack = []            # per running call: its inputs' nodes
        self._handles = []
        if not hasattr(model, "named_modules"):
            return
        modules = dict(model.named_modules())
        for path, module in modules.items():
            parts, scope = path.split(".") if path else [], self.root
            for i, part in enumerate(parts):
                sub = modules.get(".".join(parts[:i + 1]))
                scope += f"/{type(sub).__name__}[{part}]"
            self.scope[path] = scope
            self._handles.append(module.register_forward_pre_hook(
                self._enter, with_kwargs=True))
            self._handles.append(module.register_forward_hook(
                self._make_exit(scope), always_call=True))

    def _enter(self, module, args, kwargs):
        # kept alive here, so that an id is not reused by a later node
        self._stack.append([t.grad_fn for t in _tensors((args, kwargs))
                            if t.grad_fn is not None])

    def _make_exit(self, scope):
        def exit_(module, args, output):
            stop = self._stack.pop()
            stop_ids = {id(n) for n in stop}
            todo = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
            seen = set()
            while todo:
                node = todo.pop()
                if id(node) in seen or id(node) in stop_ids:
                    continue
                seen.add(id(node))
                if _is_leaf_sink(node):
                    continue
                self.owner.setdefault(id(node), (node, scope))
                todo.extend(_children(node))
        return exit_

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def _forward_order(roots):
    """Every node reachable from ``roots``, each after all of its inputs."""
    order, done, stack = [], set(), [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(_children(node))
                     if id(c) not in done)
    return order


def _output_shapes(nodes, outputs, leaves):
    """id(node) -> [shape or None per output], from one backward pass."""
    shapes, handles = {}, []
    for node in nodes:
        def record(grads, node=node):
            shapes[id(node)] = [None if g is None else tuple(g.shape) for g in grads]
        handles.append(node.register_prehook(record))
    try:
        _autograd_grad(outputs, leaves, grad_outputs=[ones_like(o) for o in outputs],
                       allow_unused=True)
    except (RuntimeError, NotImplementedError):
        pass            # shapes are labels only: the graph is drawn without them
    finally:
        for h in handles:
            h.remove()
    return shapes


class _Names:
    """Unique node names: ``name``, then ``name_1``, ``name_2``, ..."""

    def __init__(self):
        self.used = set()

    def __call__(self, name):
        out, k = name, 0
        while out in self.used:
            k += 1
            out = f"{name}_{k}"
        self.used.add(out)
        return out


def _node(name, op, inputs=(), shapes=None, site=None):
    attr = {}
    if shapes is not None:
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(
            shape=[_shape_proto(s) for s in shapes]))
    if site is not None:
        attr["site"] = AttrValue(s=f"{site[0]}:{site[1]}".encode())
    return NodeDef(name=name, op=op, input=list(inputs), attr=attr)


def _feed(args):
    """The forward's positional arguments, floating-point tensors replaced by
    detached copies that require grad."""
    if args is None:
        args = ()
    elif not isinstance(args, (tuple, list)):
        args = (args,)
    return [x.detach().requires_grad_(True)
            if isinstance(x, TensorBase) and x.is_floating_point() else x
            for x in args]


def graph(model, args, verbose=False):
    """(``GraphDef``, ``RunMetadata``) of one call ``model(*args)``; see the
    module docstring."""
    fed = _feed(args)
    modes = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") \
        else []
    scopes = _Scopes(model)
    try:
        for m, _ in modes:
            m.training = False
        with enable_grad():
            output = model(*fed)
    finally:
        scopes.remove()
        for m, mode in modes:
            m.training = mode
    outputs = _tensors(output)

    unique = _Names()
    nodes, leaf_name = [], {}
    for name, x in zip(_argument_names(model, len(fed)), fed):
        if isinstance(x, TensorBase):
            leaf_name[id(x)] = unique(f"input/{name}")
            nodes.append(_node(leaf_name[id(x)], "IO Node", shapes=[x.shape]))
    params = {}
    if hasattr(model, "named_parameters"):
        for path, p in model.named_parameters():
            owner, _, attr = path.rpartition(".")
            params[id(p)] = f"{scopes.scope.get(owner, scopes.root)}/{attr}"

    roots = [t.grad_fn for t in outputs if t.grad_fn is not None]
    order = _forward_order(roots)
    differentiable = [t for t in outputs if t.requires_grad]
    leaves = [n.variable for n in order
              if _is_leaf_sink(n) and n.variable is not None]
    shapes = _output_shapes(order, differentiable, leaves) if differentiable else {}

    node_name = {}
    for node in order:
        if _is_leaf_sink(node):
            v = node.variable
            if v is not None and id(v) in leaf_name:
                node_name[id(node)] = leaf_name[id(v)]
                continue
            is_param = v is not None and id(v) in params
            name = unique(params[id(v)] if is_param else f"{scopes.root}/leaf")
            node_name[id(node)] = name
            if v is not None:
                leaf_name[id(v)] = name
            nodes.append(_node(name, "Parameter" if is_param else "Leaf",
                               shapes=None if v is None else [v.shape]))
            continue
        scope = scopes.owner.get(id(node), (node, scopes.root))[1]
        name = node_name[id(node)] = unique(f"{scope}/{node.name()}")
        inputs = [node_name[id(c)] + (f":{k}" if k else "")
                  for c, k in node.next_functions if c is not None]
        nodes.append(_node(name, node.name(), inputs, shapes.get(id(node)),
                           getattr(node, "_site", None)))

    for i, t in enumerate(outputs):
        if t.grad_fn is not None:
            source = [node_name[id(t.grad_fn)]]
        elif id(t) in leaf_name:
            source = [leaf_name[id(t)]]
        else:
            source = []
        nodes.append(_node(f"output/output.{i + 1}", "IO Node", source, [t.shape]))

    if verbose:
        for n in nodes:
            # ``in`` first: reading a missing key of a proto map would add it
            listed = n.attr["_output_shapes"].list.shape \
                if "_output_shapes" in n.attr else []
            dims = ["?" if s.unknown_rank else [d.size for d in s.dim] for s in listed]
            print(f"{n.name} = {n.op}({', '.join(n.input)})  {dims}")
    run = RunMetadata(step_stats=StepStats(
        dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), run
