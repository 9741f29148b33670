"""polygraphy.backend.pyt.PytRunner against ONNX-Runtime and the built-in runtime on the same module
exported to ONNX (issue 20, item 2). Skipped (exit 77) when PyTorch (python3-torch) is not installed."""
import os
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

try:
    import torch
except ImportError:
    print("PyTorch is not installed (python3-torch): skipped")
    sys.exit(77)

from polygraphy_test_support import onnxrt_available, require_models

require_models()

from polygraphy.backend.onnxrt import OnnxrtRunner  # noqa: E402
from polygraphy.backend.onnxrt import SessionFromOnnx as OnnxrtSessionFromOnnx  # noqa: E402
from polygraphy.backend.pyt import PytRunner  # noqa: E402
from polygraphy.backend.ref import RefRunner  # noqa: E402
from polygraphy.backend.ref import SessionFromOnnx as RefSessionFromOnnx  # noqa: E402
from polygraphy.common import TensorMetadata  # noqa: E402
from polygraphy.comparator import Comparator, CompareFunc, DataLoader  # noqa: E402
from polygraphy.exception import (  # noqa: E402
    PolygraphyException,
    PolygraphyUnsupportedError,
    PolygraphyUsageError,
)


class TwoHeads(torch.nn.Module):
    """A small convolutional model with two outputs: class scores and a feature map."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        features = torch.relu(self.conv(x))
        scores = torch.softmax(self.fc(features.mean(dim=(2, 3))), dim=1)
        return scores, features


INPUT_METADATA = TensorMetadata().add("x", np.float32, (2, 3, 8, 8))
OUTPUT_NAMES = ["scores", "features"]


def make_module(seed=0):
    torch.manual_seed(seed)
    return TwoHeads().eval()


class PytRunnerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.onnx_path = os.path.join(cls.folder.name, "two_heads.onnx")
        torch.onnx.export(make_module(), torch.zeros(2, 3, 8, 8), cls.onnx_path, input_names=["x"],
                          output_names=OUTPUT_NAMES, opset_version=13)

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def onnx_runners(self):
        runners = [RefRunner(RefSessionFromOnnx(self.onnx_path))]
        if onnxrt_available():
            runners.append(OnnxrtRunner(OnnxrtSessionFromOnnx(self.onnx_path)))
        return runners

    def test_matches_onnxrt_and_ref_on_the_exported_model(self):
        runners = [PytRunner(make_module, INPUT_METADATA, OUTPUT_NAMES)] + self.onnx_runners()
        run_results = Comparator.run(runners, data_loader=DataLoader(iterations=2))
        self.assertEqual(len(run_results), len(runners))
        accuracy = Comparator.compare_accuracy(run_results, compare_func=CompareFunc.simple(atol=1e-5, rtol=1e-4))
        self.assertTrue(bool(accuracy))
        self.assertEqual(sorted(run_results[runners[0].name][0].keys()), sorted(OUTPUT_NAMES))

    def test_different_weights_fail_the_comparison(self):
        runners = [PytRunner(make_module(seed=1), INPUT_METADATA, OUTPUT_NAMES), self.onnx_runners()[0]]
        run_results = Comparator.run(runners)
        self.assertFalse(bool(Comparator.compare_accuracy(run_results)))

    def test_direct_inference_matches_torch(self):
        module = make_module()
        data = np.random.default_rng(0).random((2, 3, 8, 8), dtype=np.float32)
        with PytRunner(module, INPUT_METADATA, OUTPUT_NAMES) as runner:
            self.assertEqual(runner.get_input_metadata().keys(), ["x"])
            outputs = runner.infer({"x": data})
        expected_scores, expected_features = module(torch.from_numpy(data))
        self.assertTrue(np.array_equal(outputs["scores"], expected_scores.detach().numpy()))
        self.assertTrue(np.array_equal(outputs["features"], expected_features.detach().numpy()))

    def test_single_tensor_output(self):
        with PytRunner(lambda: torch.nn.ReLU(), TensorMetadata().add("x", np.float32, (4,)), ["y"]) as runner:
            outputs = runner.infer({"x": np.array([-1, 0, 1, 2], dtype=np.float32)})
        self.assertTrue(np.array_equal(outputs["y"], np.array([0, 0, 1, 2], dtype=np.float32)))

    def test_output_name_count_mismatch_is_a_usage_error(self):
        with PytRunner(make_module(), INPUT_METADATA, ["only_one"]) as runner:
            with self.assertRaisesRegex(PolygraphyUsageError, r"returned 2 output\(s\) but output_names has 1"):
                runner.infer({"x": np.zeros((2, 3, 8, 8), dtype=np.float32)})

    def test_loader_returning_something_else_is_a_usage_error(self):
        runner = PytRunner(lambda: "not a module", INPUT_METADATA, OUTPUT_NAMES)
        with self.assertRaisesRegex(PolygraphyUsageError, "the model loader returned str, expected a torch.nn.Module"):
            runner.activate()
        with self.assertRaisesRegex(PolygraphyUsageError, "expected a torch.nn.Module or a loader returning one"):
            PytRunner(42, INPUT_METADATA, OUTPUT_NAMES).activate()

    def test_wrong_input_shape_and_inactive_runner_raise(self):
        runner = PytRunner(make_module(), INPUT_METADATA, OUTPUT_NAMES)
        with self.assertRaises(PolygraphyException):
            runner.infer({"x": np.zeros((2, 3, 8, 8), dtype=np.float32)})
        with runner:
            with self.assertRaisesRegex(PolygraphyException, "x"):
                runner.infer({"x": np.zeros((1, 3, 8, 8), dtype=np.float32)})

    def test_without_pytorch_activation_says_what_to_install(self):
        runner = PytRunner(make_module(), INPUT_METADATA, OUTPUT_NAMES)
        with mock.patch.dict(sys.modules, {"torch": None}):  # `import torch` raises ImportError
            with self.assertRaisesRegex(PolygraphyUnsupportedError, "PytRunner needs PyTorch .*python3-torch"):
                runner.activate()
        self.assertFalse(runner.is_active)


if __name__ == "__main__":
    unittest.main()
