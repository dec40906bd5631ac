"""``cygrad.onnx``: importable, so scripts that ``import torch.onnx`` load;
cygrad does not export ONNX graphs (it records no traceable program), and
``export`` says so."""

__all__ = ["OnnxExporterError", "export", "is_in_onnx_export"]


class OnnxExporterError(RuntimeError):
    """An ONNX export failed (torch's name)."""


def export(model, args=(), f=None, *a, **kw):
    """Not available: raises NotImplementedError (cygrad does not export ONNX)."""
    raise NotImplementedError(
        "cygrad does not export ONNX: it has no tracer or graph compiler to turn a "
        "module into an ONNX program. Save the weights with cygrad.save(model."
        "state_dict(), path) and export from PyTorch (load them with "
        "torch.nn.Module.load_state_dict) if you need an ONNX file.")


def is_in_onnx_export():
    return False
