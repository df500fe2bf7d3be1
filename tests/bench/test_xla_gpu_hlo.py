"""bench/xla_gpu_hlo.py: the kernel listing it reads from a compiled GPU module's HLO text (a
hand-written module in the compiler's print format; no GPU compiler needed)."""

from __future__ import annotations

import xla_gpu_hlo as H

HLO = """HloModule jit_f, is_scheduled=true

%region_add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.9 = f32[] add(%a, %b), metadata={op_name="jit(f)/other/reduce_sum"}
}

%fused_reduce (p0: f32[4,8]) -> f32[4] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %exp.1 = f32[4,8]{1,0} exponential(%p0), metadata={op_name="jit(f)/sm/exp"}
  %c = f32[] constant(0)
  ROOT %reduce.1 = f32[4]{0} reduce(%exp.1, %c), dimensions={1}, to_apply=%region_add, metadata={op_name="jit(f)/sm/reduce_sum"}
}

%gemm_inner (q0: f32[4,8], q1: f32[8,8]) -> f32[4,8] {
  %q0 = f32[4,8]{1,0} parameter(0)
  %q1 = f32[8,8]{1,0} parameter(1)
  ROOT %dot.1 = f32[4,8]{1,0} dot(%q0, %q1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/fc/dot_general"}
}

%gemm_fusion_dot.1_computation (r0: f32[4,8], r1: f32[8,8]) -> f32[4,8] {
  %r0 = f32[4,8]{1,0} parameter(0)
  %r1 = f32[8,8]{1,0} parameter(1)
  %nested = f32[4,8]{1,0} fusion(%r0, %r1), kind=kCustom, calls=%gemm_inner
  %r2 = f32[4,8]{1,0} negate(%nested), metadata={op_name="jit(f)/fc/neg"}
  ROOT %r3 = f32[4,8]{1,0} negate(%r2), metadata={op_name="jit(f)/fc/neg"}
}

ENTRY %main.1 (x.1: f32[4,8], w.1: f32[8,8]) -> (f32[4], f32[4,8], f32[4,8]) {
  %x.1 = f32[4,8]{1,0} parameter(0)
  %w.1 = f32[8,8]{1,0} parameter(1)
  %input_reduce_fusion = f32[4]{0} fusion(%x.1), kind=kInput, calls=%fused_reduce, metadata={op_name="jit(f)/sm/reduce_sum"}
  %gemm_fusion_dot.1 = f32[4,8]{1,0} fusion(%x.1, %w.1), kind=kCustom, calls=%gemm_fusion_dot.1_computation, backend_config={"operation_queue_id":"0","fusion_backend_config":{"kind":"__triton_nested_gemm_fusion","block_level_fusion_config":{"num_warps":"2","output_tiles":[{"sizes":["16","8"]}],"num_ctas":1}}}
  %bitcast.2 = f32[32]{0} bitcast(%gemm_fusion_dot.1)
  %cublas-gemm.1 = (f32[4,8]{1,0}, s8[0]{0}) custom-call(%x.1, %w.1), custom_call_target="__cublas$gemm", metadata={op_name="jit(f)/fc2/dot_general"}
  %get-tuple-element.1 = f32[4,8]{1,0} get-tuple-element(%cublas-gemm.1), index=0
  ROOT %tuple = (f32[4], f32[4,8], f32[4,8]) tuple(%input_reduce_fusion, %gemm_fusion_dot.1, %get-tuple-element.1)
}
"""


def test_kernels_list_launches_with_kind_tile_and_the_ops_inside():
    # parameters, bitcast, get-tuple-element and tuple launch nothing: 3 kernels.  The reduce's
    # combiner (to_apply) is shared and named after another op: not an op of the kernel.  The
    # GEMM fusion's ops come through its nested fusion; a repeated op name is listed once.
    assert H.kernels(HLO) == [
        ("input_reduce_fusion", "kInput", ["sm/exp", "sm/reduce_sum"]),
        ("gemm_fusion_dot.1", "kCustom __triton_nested_gemm_fusion tile [16,8] warps 2",
         ["fc/dot_general", "fc/neg"]),
        ("cublas-gemm.1", "custom-call __cublas$gemm", ["fc2/dot_general"]),
    ]


def test_base_drops_the_repeat_suffix_of_a_plan_node():
    assert H._base("ln1/div#2") == "ln1/div" and H._base("attn/q/add") == "attn/q/add"
