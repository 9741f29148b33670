"""polygraphy: the Python API of the C++ polygraphy library, under Polygraphy's module paths.

The classes and functions are bindings of libpolygraphy (the extension module polygraphy._core);
the modules below only give them Polygraphy's names:

- polygraphy.backend.onnx: OnnxFromPath, OnnxFromBytes, ModifyOutputs, SaveOnnx, BytesFromOnnx, the graph API
  (ModelProto.nodes as Node views, add_node, insert_node, cleanup, toposort, ...) and the
  immediately evaluated onnx_from_path, modify_outputs, save_onnx, bytes_from_onnx, ...
- polygraphy.backend.onnxrt: OnnxrtRunner, SessionFromOnnx (ONNX-Runtime)
- polygraphy.backend.ref: RefRunner, SessionFromOnnx (the built-in CPU runtime)
- polygraphy.backend.base: BaseRunner (subclassable in Python)
- polygraphy.backend.pyt: PytRunner (a torch.nn.Module, with python3-torch)
- polygraphy.comparator: Comparator, CompareFunc, PostprocessFunc, DataLoader, RunResults
- polygraphy.common: TensorMetadata
- polygraphy.func: extend (a decorator extending a loader with a function)
- polygraphy.logger: G_LOGGER
- polygraphy.json: save_json, load_json
- polygraphy.exception: PolygraphyException and its subclasses
"""
