"""`find_precision` (debug precision) and the block lists of `convert_to_fp16` from Python (issue 37)."""
import json
import os
import tempfile
import unittest

from polygraphy_test_support import EXAMPLE_CNN, require_models

require_models()

from polygraphy.backend.onnx import convert_to_fp16, onnx_from_path  # noqa: E402
from polygraphy.comparator import find_precision  # noqa: E402
from polygraphy.exception import PolygraphyUsageError  # noqa: E402


class PrecisionTest(unittest.TestCase):
    def test_search_answers_in_node_names_and_saves_its_block_lists(self):
        with tempfile.TemporaryDirectory() as folder:
            block_list = os.path.join(folder, "block_list.json")
            mixed = os.path.join(folder, "mixed.onnx")
            # A tolerance fp16 misses on this classifier, so that something must stay in float32.
            result = find_precision(EXAMPLE_CNN, atol=1e-7, rtol=1e-7, iterations=2, output=mixed,
                                    block_list=block_list)
            self.assertTrue(result["kept"])
            self.assertEqual(result["samples"], 2)
            self.assertGreaterEqual(result["evaluations"], 1)
            self.assertTrue(result["one_minimal"])
            self.assertIn("evaluation(s) on 2 sample(s) each", result["summary"])
            with open(block_list) as file:
                lists = json.load(file)
            self.assertEqual(lists["node_block_list"], result["kept"])
            self.assertEqual(lists["node_block_list"], result["node_block_list"])
            # The names are the model's: the block lists convert it again.
            convert_to_fp16(onnx_from_path(EXAMPLE_CNN), node_block_list=result["kept"])
            self.assertTrue(os.path.isfile(mixed))

    def test_convert_to_fp16_takes_the_block_lists_and_refuses_unknown_nodes(self):
        model = onnx_from_path(EXAMPLE_CNN)
        convert_to_fp16(model, node_block_list=[], op_block_list=["Softmax"])
        convert_to_fp16(model, bf16=True)
        with self.assertRaises(PolygraphyUsageError) as error:
            convert_to_fp16(model, node_block_list=["/no/such/node"])
        self.assertIn("The node block list names '/no/such/node', which no node of the model has", str(error.exception))
        with self.assertRaises(PolygraphyUsageError):
            find_precision(EXAMPLE_CNN, precision="fp8")


if __name__ == "__main__":
    unittest.main()
