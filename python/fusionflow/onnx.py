"""fusionflow.onnx, as torch.onnx, so that a program importing it (to export its model once
trained) runs: exporting is not offered, and says so when called."""

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=None, f=None, *more, **kwargs):
    """Not offered: FusionFlow has no ONNX exporter (no traced graph to write); save the
    weights with fusionflow.save(model.state_dict(), path) instead."""
    raise NotImplementedError("fusionflow.onnx.export(%s): exporting to ONNX is not offered by FusionFlow; save the "
                              "weights with fusionflow.save(model.state_dict(), path) and export from PyTorch"
                              % type(model).__name__)


def is_in_onnx_export():
    """False: nothing is ever being exported (models that branch on it take their eager path)."""
    return False
