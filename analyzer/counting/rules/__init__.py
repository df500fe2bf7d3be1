"""Cost rules, one module per op family. Importing this package fills ``cost.RULES``."""

from analyzer.counting.rules.onnx import control
from analyzer.counting.rules.onnx import attention
from analyzer.counting.rules.onnx import elementwise
from analyzer.counting.rules.onnx import indexing
from analyzer.counting.rules.onnx import linalg
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx import loss
from analyzer.counting.rules.onnx import movement
from analyzer.counting.rules.onnx import normalization
from analyzer.counting.rules.onnx import pooling
from analyzer.counting.rules.onnx import quantized
from analyzer.counting.rules.onnx import recurrent
from analyzer.counting.rules.onnx import reduce
from analyzer.counting.rules.onnx import rng
from analyzer.counting.rules.onnx import sampling
from analyzer.counting.rules.onnx import sequence
from analyzer.counting.rules.onnx import spectral
from analyzer.counting.rules.onnx import training
from analyzer.counting.rules.onnx import views
from analyzer.counting.rules.onnx_ml import ml
from analyzer.counting.rules.onnxruntime import contrib
from analyzer.counting.rules.onnxruntime import quantized as ort_quantized
from analyzer.counting.rules.jax import control as lax_control  # JAX primitives, domain "jax"
from analyzer.counting.rules.jax import elementwise as lax_elementwise
from analyzer.counting.rules.jax import linalg as lax_linalg
from analyzer.counting.rules.jax import linear as lax_linear
from analyzer.counting.rules.jax import movement as lax_movement
from analyzer.counting.rules.jax import reduce as lax_reduce

from analyzer.counting.rules.jax import uncosted as _jax_uncosted
from analyzer.counting.rules.onnx import uncosted as _onnx_uncosted
from analyzer.counting.rules.onnxruntime import uncosted as _ort_uncosted

# (domain, op) -> why no rule counts it: the note of such a node in a report
WHY_UNCOSTED: dict[tuple[str, str], str] = {
    **_onnx_uncosted.UNCOSTED, **_ort_uncosted.UNCOSTED, **_jax_uncosted.UNCOSTED}
