"""Fast CPU inference for piiner: ONNX export with the CRF (scores for the runtime to decode, or the decode inside
the graph; `onnx_export`), dynamic int8 quantisation (`quantize`) and an onnxruntime entity finder that matches the
PyTorch pipeline (`onnx_runtime`)."""
