"""Runners, loaders and the Comparator from Python (issue 20, items 1 and 2)."""
import copy
import os
import tempfile
import unittest

import numpy as np

from polygraphy_test_support import EXAMPLE_CNN, IDENTITY, require_models, skip_without_onnxrt

require_models()

from polygraphy.backend.onnx import BytesFromOnnx, ModifyOutputs, OnnxFromPath, SaveOnnx, onnx_from_path  # noqa: E402
from polygraphy.backend.onnxrt import OnnxrtRunner  # noqa: E402
from polygraphy.backend.onnxrt import SessionFromOnnx as OnnxrtSession  # noqa: E402
from polygraphy.backend.ref import RefRunner, SessionFromOnnx  # noqa: E402
from polygraphy.common import TensorMetadata  # noqa: E402
from polygraphy.comparator import Comparator, CompareFunc, DataLoader, RunResults  # noqa: E402
from polygraphy.json import load_json, save_json  # noqa: E402


class RunnerTest(unittest.TestCase):
    def test_identity_runs_and_outputs_numpy(self):
        with RefRunner(SessionFromOnnx(OnnxFromPath(IDENTITY))) as runner:
            self.assertTrue(runner.is_active)
            data = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
            outputs = runner.infer(feed_dict={"x": data})
            self.assertEqual(list(outputs), ["y"])
            self.assertEqual(outputs["y"].dtype, np.float32)
            self.assertTrue(np.array_equal(outputs["y"], data))
            metadata = runner.get_input_metadata()
            self.assertEqual(list(metadata), ["x"])
            self.assertEqual(metadata["x"].dtype, np.float32)
            self.assertEqual(metadata["x"].shape, (1, 1, 2, 2))
        self.assertFalse(runner.is_active)

    def test_outputs_survive_the_runner_and_deepcopy(self):
        with RefRunner(SessionFromOnnx(IDENTITY)) as runner:
            first = copy.deepcopy(runner.infer({"x": np.ones((1, 1, 2, 2), np.float32)}))
            second = runner.infer({"x": np.zeros((1, 1, 2, 2), np.float32)})
        self.assertTrue(np.array_equal(first["y"], np.ones((1, 1, 2, 2))))
        self.assertTrue(np.array_equal(second["y"], np.zeros((1, 1, 2, 2))))

    def test_loader_chain_saves_and_modifies(self):
        with tempfile.TemporaryDirectory() as folder:
            saved = os.path.join(folder, "cnn_all.onnx")
            load = SaveOnnx(ModifyOutputs(OnnxFromPath(EXAMPLE_CNN), outputs=["mark", "all"]), path=saved)
            model = load()
            self.assertGreater(len(model.output_names), 1)
            self.assertTrue(os.path.isfile(saved))
            self.assertEqual(onnx_from_path(saved).output_names, model.output_names)
            self.assertIsInstance(BytesFromOnnx(OnnxFromPath(IDENTITY))(), bytes)

    def test_python_callable_is_a_loader(self):
        calls = []

        def load():
            calls.append(1)
            return onnx_from_path(IDENTITY)

        runner = RefRunner(SessionFromOnnx(load))
        self.assertEqual(calls, [])  # lazy: nothing loaded before activation
        with runner:
            runner.infer({"x": np.ones((1, 1, 2, 2), np.float32)})
        self.assertEqual(calls, [1])


class ComparatorTest(unittest.TestCase):
    def test_default_data_loader_and_save_load(self):
        runners = [RefRunner(SessionFromOnnx(EXAMPLE_CNN)), RefRunner(SessionFromOnnx(EXAMPLE_CNN, fuse_activations=False))]
        results = Comparator.run(runners)
        self.assertEqual(len(results), 2)
        self.assertEqual(results.keys(), [runner.name for runner in runners])
        self.assertTrue(bool(Comparator.compare_accuracy(results, compare_func=CompareFunc.simple(atol=1e-5, rtol=1e-5))))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "results.json")
            results.save(path)
            loaded = RunResults.load(path)
            self.assertEqual(loaded.keys(), results.keys())
            first = results[runners[0].name][0]
            again = loaded[runners[0].name][0]
            self.assertEqual(list(first), list(again))
            for name in first:
                self.assertTrue(np.array_equal(first[name], again[name]))
            self.assertEqual(load_json(path).keys(), results.keys())

    def test_list_and_generator_data_loaders(self):
        feeds = [{"x": np.full((1, 1, 2, 2), value, np.float32)} for value in (1.0, 2.0, 3.0)]
        results = Comparator.run([RefRunner(SessionFromOnnx(IDENTITY))], data_loader=feeds)
        iterations = results.items()[0][1]
        self.assertEqual([float(iteration["y"][0, 0, 0, 0]) for iteration in iterations], [1.0, 2.0, 3.0])

        class Loader:
            def __iter__(self):
                # The Comparator sets input_metadata before iterating.
                for _ in range(2):
                    (name, meta), = self.input_metadata.items()
                    yield {name: np.zeros(meta.shape, dtype=meta.dtype)}

        loader = Loader()
        results = Comparator.run([RefRunner(SessionFromOnnx(IDENTITY))], data_loader=loader)
        self.assertIsInstance(loader.input_metadata, TensorMetadata)
        self.assertEqual(len(results.items()[0][1]), 2)

    def test_data_loader_bounds_and_compare_tolerances(self):
        loader = DataLoader(float_range=(0.0, 2.0), iterations=2)
        results = Comparator.run([RefRunner(SessionFromOnnx(IDENTITY))], data_loader=loader)
        values = np.stack([iteration["y"] for iteration in results.items()[0][1]])
        self.assertGreaterEqual(values.min(), 0.0)
        self.assertLessEqual(values.max(), 2.0)
        self.assertGreater(values.max(), 1.0)  # the range reached past the default [0, 1]

        # Two results that differ by 0.5: failing at atol=0.1, passing at atol=1.
        a, b = RunResults(), RunResults()
        from polygraphy.comparator import IterationResult
        a.add([IterationResult({"y": np.zeros(4, np.float32)}, runner_name="a")], "a")
        b.add([IterationResult({"y": np.full(4, 0.5, np.float32)}, runner_name="b")], "b")
        a.extend(b)
        self.assertFalse(bool(Comparator.compare_accuracy(a, compare_func=CompareFunc.simple(atol=0.1, rtol=0.0))))
        self.assertTrue(bool(Comparator.compare_accuracy(a, compare_func=CompareFunc.simple(atol={"": 1.0}))))

    def test_data_loader_iterates_from_python(self):
        with RefRunner(SessionFromOnnx(IDENTITY)) as runner:
            metadata = runner.get_input_metadata()
        loader = DataLoader(iterations=3, seed=5)
        loader.input_metadata = metadata
        feeds = list(loader)
        self.assertEqual(len(feeds), 3)
        self.assertEqual(feeds[0]["x"].shape, (1, 1, 2, 2))
        self.assertFalse(np.array_equal(feeds[0]["x"], feeds[1]["x"]))  # a new seed per iteration
        again = DataLoader(iterations=1, seed=5)
        again.input_metadata = metadata
        self.assertTrue(np.array_equal(again[0]["x"], feeds[0]["x"]))  # the same seed, the same values
        # Comparator.run feeds the runners what iterating the loader yields.
        results = Comparator.run([RefRunner(SessionFromOnnx(IDENTITY))], data_loader=DataLoader(iterations=3, seed=5))
        for feed, iteration in zip(feeds, results.items()[0][1]):
            self.assertTrue(np.array_equal(iteration["y"], feed["x"]))

    def test_iteration_result_round_trips_dtypes(self):
        from polygraphy.comparator import IterationResult

        arrays = {
            "f16": np.arange(6, dtype=np.float16).reshape(2, 3),
            "b": np.array([True, False]),
            "i8": np.array([-1, 2], dtype=np.int8),
            "u64": np.array([2**63], dtype=np.uint64),
            "scalar": np.float64(2.5),
            "s": np.array([["a", "bc"], ["", "d"]]),
        }
        iteration = IterationResult(arrays, runtime=0.5, runner_name="r")
        self.assertEqual(list(iteration), list(arrays))
        for name, array in arrays.items():
            got = iteration[name]
            self.assertEqual(got.shape, np.shape(array), name)
            if name == "s":
                self.assertEqual(got.dtype, object)
                self.assertEqual(got.tolist(), [["a", "bc"], ["", "d"]])
            else:
                self.assertEqual(got.dtype, np.asarray(array).dtype, name)
                self.assertTrue(np.array_equal(got, array), name)

    def test_python_compare_func(self):
        feeds = [{"x": np.full((1, 1, 2, 2), value, np.float32)} for value in (1.0, -1.0)]
        results = Comparator.run([RefRunner(SessionFromOnnx(IDENTITY)), RefRunner(SessionFromOnnx(IDENTITY))], data_loader=feeds)
        seen = []

        def positive_outputs(first, second):
            seen.append((first.runner_name, second.runner_name))
            return {name: bool(np.all(first[name] > 0)) and np.array_equal(first[name], second[name]) for name in first}

        accuracy = Comparator.compare_accuracy(results, compare_func=positive_outputs)
        self.assertEqual(len(seen), 2)
        self.assertEqual(seen[0], tuple(results.keys()))
        self.assertFalse(bool(accuracy))
        self.assertEqual(accuracy.percentage(), 0.5)
        self.assertTrue(bool(Comparator.compare_accuracy(results, compare_func=lambda a, b: {"y": np.bool_(True)})))

    def test_save_json_of_inputs(self):
        feeds = [{"x": np.ones((1, 1, 2, 2), np.float32)}]
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "inputs.json")
            save_json(feeds, path)
            loaded = load_json(path)
            self.assertEqual(len(loaded), 1)
            self.assertTrue(np.array_equal(loaded[0]["x"], feeds[0]["x"]))

    @skip_without_onnxrt
    def test_onnxrt_against_ref(self):
        runners = [OnnxrtRunner(OnnxrtSession(EXAMPLE_CNN)), RefRunner(SessionFromOnnx(OnnxFromPath(EXAMPLE_CNN)))]
        results = Comparator.run(runners, data_loader=DataLoader(float_range=(-1.0, 1.0)))
        self.assertTrue(bool(Comparator.compare_accuracy(results, compare_func=CompareFunc.simple(atol=1e-4))))


if __name__ == "__main__":
    unittest.main()
