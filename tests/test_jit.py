"""cygrad.jit: scripted and traced programs run eagerly with the same
numbers as torch's; whole-module save/load; TorchScript archives refused."""

import io

import numpy as np
import pytest

import cygrad
from cygrad import nn

torch = pytest.importorskip("torch")

# torch 2.13 deprecates TorchScript, and cygrad.jit warns as it does: checked
# once below, ignored elsewhere
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)

    @cygrad.jit.ignore
    def debug(self):
        return "not compiled"

    def forward(self, x):
        if cygrad.jit.is_scripting():
            raise AssertionError("cygrad never scripts")
        return self.b(cygrad.relu(self.a(x)))


def test_script_and_trace_run_the_module_as_torch_runs_its_scripted_one():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    cm = TwoLayer()
    sd = tm.state_dict()
    cm.load_state_dict({"a.weight": sd["0.weight"].numpy(), "a.bias": sd["0.bias"].numpy(),
                        "b.weight": sd["2.weight"].numpy(), "b.bias": sd["2.bias"].numpy()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = torch.jit.script(tm)(torch.from_numpy(x)).detach().numpy()
    assert cygrad.jit.script(cm) is cm
    traced = cygrad.jit.trace(cm, cygrad.from_numpy(x))
    assert traced is cm and cm.debug() == "not compiled"
    np.testing.assert_allclose(traced(cygrad.from_numpy(x)).detach().numpy(), want,
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="example_inputs"):
        cygrad.jit.trace(cm)
    with pytest.raises(RuntimeError, match="eval mode"):
        cygrad.jit.freeze(cm)
    assert cygrad.jit.optimize_for_inference(cm) is cm and not cm.training


def test_trace_surfaces_errors_of_the_example_call():
    with pytest.raises(RuntimeError):
        cygrad.jit.trace(nn.Linear(3, 2), cygrad.ones(2, 5))


def test_fork_wait_annotate_and_final():
    fut = cygrad.jit.fork(lambda a, b: a + b, cygrad.ones(2), b=2.0)
    assert cygrad.jit.wait(fut).tolist() == [3.0, 3.0]
    bad = cygrad.jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bad.wait()
    assert cygrad.jit.annotate(list, []) == []
    assert cygrad.jit.Final is not None and not cygrad.jit.is_tracing()


def test_save_load_whole_module_and_refuse_torchscript(tmp_path):
    m = TwoLayer()
    path = tmp_path / "m.pt"
    cygrad.jit.save(m, str(path))
    m2 = cygrad.jit.load(str(path))
    assert type(m2) is TwoLayer
    x = cygrad.randn(2, 4)
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="TorchScript archive"):
        cygrad.jit.load(buf)


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_entry_points_warn_as_torch_deprecates_them():
    m = nn.Linear(2, 2)
    for call in (lambda: cygrad.jit.script(m), lambda: cygrad.jit.trace(m, cygrad.ones(1, 2)),
                 lambda: cygrad.jit.fork(m, cygrad.ones(1, 2)),
                 lambda: cygrad.jit.freeze(m.eval())):
        with pytest.warns(DeprecationWarning, match="is deprecated"):
            call()
