"""ONNX loaders (lazy classes and their immediately evaluated twins), and the graph API: a loaded
ModelProto's `nodes` (Node views) and its edits (add_node, remove_node, insert_node, set_outputs,
cleanup, toposort, fold_constants, extract)."""
from polygraphy._core import (
    BytesFromOnnx,
    ModelProto,
    ModifyOutputs,
    Node,
    OnnxFromBytes,
    OnnxFromPath,
    SaveOnnx,
    bytes_from_onnx,
    convert_to_fp16,
    modify_outputs,
    onnx_from_bytes,
    onnx_from_path,
    save_onnx,
)

__all__ = [
    "BytesFromOnnx",
    "ModelProto",
    "ModifyOutputs",
    "Node",
    "OnnxFromBytes",
    "OnnxFromPath",
    "SaveOnnx",
    "bytes_from_onnx",
    "convert_to_fp16",
    "modify_outputs",
    "onnx_from_bytes",
    "onnx_from_path",
    "save_onnx",
]
