"""Rules for the standard ONNX domain (ai.onnx and ai.onnx.preview.training)."""
