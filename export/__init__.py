"""Fast CPU inference for piiner: ONNX export with the CRF decode inside the graph (`onnx_export`), dynamic int8
quantisation (`quantize`) and an onnxruntime entity finder that matches the PyTorch pipeline (`onnx_runtime`)."""
