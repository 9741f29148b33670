from polygraphy.backend.onnx import OnnxFromPath, BytesFromOnnx
from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from polygraphy.backend.ref import RefRunner
from polygraphy.backend.ref import SessionFromOnnx as RefSessionFromOnnx
from polygraphy.comparator import Comparator, DataLoader

# Convert the model into the various formats we care about.
load_model = OnnxFromPath("example_cnn.onnx")
export_serialized_onnx = BytesFromOnnx(load_model)
build_onnxrt_session = SessionFromOnnx(export_serialized_onnx)
build_ref_session = RefSessionFromOnnx(load_model)

# We want to run the model with ONNX Runtime and the built-in runtime.
runners = [
    OnnxrtRunner(build_onnxrt_session),
    RefRunner(build_ref_session),
]

# For this model, assume inputs need to be bounded.
data_loader = DataLoader(int_range=(0, 2), float_range=(0.0, 2.0))

# Finally, run and check accuracy.
run_results = Comparator.run(runners, data_loader=data_loader)
assert bool(Comparator.compare_accuracy(run_results))
