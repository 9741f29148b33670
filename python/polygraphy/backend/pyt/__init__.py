"""PyTorch: PytRunner runs a torch.nn.Module (Debian's python3-torch), on the CPU.

PyTorch is imported when a runner is activated, so that importing this module needs no PyTorch.
"""
from collections import OrderedDict

import numpy as np

from polygraphy.backend.base import BaseRunner
from polygraphy.exception import PolygraphyUnsupportedError, PolygraphyUsageError

__all__ = ["PytRunner"]


def _import_torch():
    try:
        import torch
    except ImportError as error:
        raise PolygraphyUnsupportedError(
            f"PytRunner needs PyTorch (Debian: apt-get install python3-torch): {error}"
        ) from None
    return torch


class PytRunner(BaseRunner):
    """Runs a torch.nn.Module in inference mode (eval(), no gradients) on the CPU.

    As Polygraphy's PytRunner, it takes:
    - model: a torch.nn.Module, or a loader (any callable taking no arguments) that returns one;
      a loader is called in activate().
    - input_metadata: a TensorMetadata of the inputs, in the order the module's forward() takes them
      (PyTorch modules do not declare their inputs).
    - output_names: names given, in order, to what forward() returns (one tensor, or a tuple or list of
      them), so that the Comparator can match them to other runners' outputs.
    infer() returns new arrays each time; they may share memory with PyTorch's output tensors.
    """

    def __init__(self, model, input_metadata, output_names, name=None):
        super().__init__(name=name, prefix="pytorch-runner")
        self._model_loader = model
        self.input_metadata = input_metadata
        self.output_names = list(output_names)
        self.model = None

    def activate_impl(self):
        torch = _import_torch()
        model = self._model_loader
        if not isinstance(model, torch.nn.Module):
            if not callable(model):
                raise PolygraphyUsageError(
                    f"PytRunner: expected a torch.nn.Module or a loader returning one, got {type(model).__name__}"
                )
            model = model()
            if not isinstance(model, torch.nn.Module):
                raise PolygraphyUsageError(
                    f"PytRunner: the model loader returned {type(model).__name__}, expected a torch.nn.Module"
                )
        self.model = model.eval()

    def deactivate_impl(self):
        self.model = None

    def get_input_metadata_impl(self):
        return self.input_metadata

    def infer_impl(self, feed_dict):
        torch = _import_torch()
        # Arrays wrapping the library's buffers may be read-only; torch.from_numpy needs writable memory.
        inputs = [
            torch.from_numpy(feed_dict[name] if feed_dict[name].flags.writeable else np.array(feed_dict[name]))
            for name in self.input_metadata.keys()
        ]
        with torch.no_grad():
            outputs = self.model(*inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        if len(outputs) != len(self.output_names):
            raise PolygraphyUsageError(
                f"PytRunner: the module returned {len(outputs)} output(s) but output_names has "
                f"{len(self.output_names)}: {self.output_names}"
            )
        return OrderedDict((name, output.detach().cpu().numpy()) for name, output in zip(self.output_names, outputs))
