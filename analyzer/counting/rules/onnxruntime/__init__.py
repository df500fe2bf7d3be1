"""Rules for onnxruntime's com.microsoft contrib ops."""
