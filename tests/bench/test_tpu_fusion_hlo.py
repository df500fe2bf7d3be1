"""bench/tpu_fusion_hlo.py: the entry-computation listing it reads from a compiled TPU module's HLO
text (a hand-written module in the compiler's print format; no TPU compiler needed)."""

from __future__ import annotations

import tpu_fusion_hlo as H

HLO = """HloModule jit_f, is_scheduled=true

%bitcast_fusion (bitcast_input: bf16[8,8]) -> bf16[8,8] {
  %bitcast_input = bf16[8,8]{1,0} parameter(0)
  ROOT %bitcast = bf16[8,8]{1,0} bitcast(%bitcast_input)
}

%fused_computation (param_0.1: bf16[8,8], param_1: bf16[8,8]) -> bf16[8,8] {
  %param_0.1 = bf16[8,8]{1,0} parameter(0)
  %fusion = bf16[8,8]{1,0} fusion(%param_0.1), kind=kLoop, calls=%bitcast_fusion
  %param_1 = bf16[8,8]{1,0} parameter(1)
  %convolution.1 = f32[8,8]{1,0} convolution(%fusion, %param_1), dim_labels=bf_io->bf
  ROOT %convert.0 = bf16[8,8]{1,0} convert(%convolution.1)
}

ENTRY %main.1 (a.1: bf16[8,8], b.1: bf16[8,8]) -> bf16[8,8] {
  %a.1 = bf16[8,8]{1,0} parameter(0), sharding={replicated}
  %copy-start = (bf16[8,8]{1,0:S(1)}, bf16[8,8]{1,0}, u32[]{:S(2)}) copy-start(%a.1), cross_program_prefetch_index=0
  %b.1 = bf16[8,8]{1,0} parameter(1), sharding={replicated}
  %copy-done = bf16[8,8]{1,0:S(1)} copy-done(%copy-start)
  ROOT %convolution_convert_fusion = bf16[8,8]{1,0} fusion(%copy-done, %b.1), kind=kOutput, calls=%fused_computation, metadata={}
}
"""


def test_entry_lists_instructions_and_each_fusions_body():
    # 4 entry instructions less 2 parameters = 2 + the fusion; its body: the inner (bitcast) fusion,
    # the convolution and the convert (parameters and bitcasts left out)
    assert H.entry_lines(HLO) == ["copy-start = copy-start", "copy-done = copy-done",
                                  "convolution_convert_fusion = fusion kOutput",
                                  "  inside: fusion, convolution, convert"]
