"""ONNX loaders (lazy classes and their immediately evaluated twins)."""
from polygraphy._core import (
    BytesFromOnnx,
    ModelProto,
    ModifyOutputs,
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
