"""bench/xla_gpu_hlo.py: the kernel listing it reads from a compiled GPU module's HLO text (a
hand-written module in the compiler's print format, and two modules XLA's GPU compiler printed for
the script's A100 target, in tests/fixtures/xla_gpu/: ``rnn_infer`` of samples/jax_models.py at
batch 8, a ``lax.scan`` of 12 trips, and a ``lax.cond`` with a matrix product in each branch; no
GPU compiler needed)."""

from __future__ import annotations

import os

import xla_gpu_hlo as H

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "xla_gpu")


def _fixture(name: str) -> str:
    with open(os.path.join(FIX, name)) as f:
        return f.read()

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
        ("input_reduce_fusion", "kInput", ["sm/exp", "sm/reduce_sum"], ""),
        ("gemm_fusion_dot.1", "kCustom __triton_nested_gemm_fusion tile [16,8] warps 2",
         ["fc/dot_general", "fc/neg"], ""),
        ("cublas-gemm.1", "custom-call __cublas$gemm", ["fc2/dot_general"], ""),
    ]
    # the two negates follow the dot of the nested fusion: the GEMM fusion's epilogue
    assert H.kernel_roles(HLO) == {"gemm_fusion_dot.1": ("gemm", {"fc/neg": "epilogue"})}


def test_base_drops_the_repeat_suffix_of_a_plan_node():
    assert H._base("ln1/div#2") == "ln1/div" and H._base("attn/q/add") == "attn/q/add"


def test_a_while_loop_body_and_condition_are_kernels_per_trip():
    # the scan: a zero state (broadcast) and a copy of xs before the loop; per trip the
    # condition's compare, the slice of xs (a dynamic-slice fusion), the counter increment, the
    # two GEMMs (x Wx, h Wh) and the bias-add + tanh; the head's GEMM and bias add after it.
    # Op names inside the body read as the plan names them (rnn/scan/...).
    h = _fixture("rnn_infer_b8_while.hlo")
    body = "while.5 body, per trip, 12 trips"
    assert H.kernels(h) == [
        ("copy.7", "copy", [], ""),
        ("loop_broadcast_fusion", "kLoop", ["rnn/broadcast_in_dim"], ""),
        ("loop_compare_fusion", "kLoop", ["rnn/while/cond/lt"], "while.5 condition, per trip, 12 trips"),
        ("loop_dynamic_slice_fusion", "kCustom __custom_fusion",
         ["rnn/while/body/jit(dynamic_index_in_dim)/dynamic_slice"], body),
        ("loop_add_fusion", "kLoop", ["rnn/while/body/add"], body),
        ("gemm_fusion_dot_general.0", "kCustom __triton_nested_gemm_fusion tile [8,16] warps 2",
         ["rnn/scan/cell/dot_general"], body),
        ("gemm_fusion_dot_general.1", "kCustom __triton_nested_gemm_fusion tile [8,16] warps 2",
         ["rnn/scan/cell/dot_general"], body),
        ("loop_tanh_fusion", "kLoop", ["rnn/scan/cell/add", "rnn/scan/cell/tanh"], body),
        ("gemm_fusion_dot_general.5", "kCustom __triton_nested_gemm_fusion tile [16,8] warps 2",
         ["head/dot_general"], ""),
        ("loop_add_fusion.1", "kLoop", ["head/add"], ""),
    ]
    assert H._count([k[3] for k in H.kernels(h)]) == "4 kernels + 6 per trip of while.5 (12 trips)"


def test_a_conditional_lists_each_branch_and_the_gemm_roles_inside():
    # true branch: tanh(v @ v), the tanh an epilogue; false branch: exp(v) @ v, the exp a
    # prologue; the predicate's compare runs once
    h = _fixture("cond_dots.hlo")
    ks = H.kernels(h)
    assert [(k[0], k[3]) for k in ks] == [
        ("loop_compare_fusion", ""),
        ("gemm_fusion_dot_general.3", "cond.1.clone branch true (one branch runs)"),
        ("gemm_fusion_dot_general.1", "cond.1.clone branch false (one branch runs)")]
    assert H.kernel_roles(h) == {
        "gemm_fusion_dot_general.3": ("gemm", {"cond/branch_1_fun/tanh": "epilogue"}),
        "gemm_fusion_dot_general.1": ("gemm", {"cond/branch_0_fun/exp": "prologue"})}
    assert H._count([k[3] for k in ks]) == \
        "1 kernels + 1 in branch true of cond.1.clone + 1 in branch false of cond.1.clone"


SPLIT_K = """HloModule jit_g, is_scheduled=true

%fused_reduce (p: f32[8,8,256]) -> f32[8,256] {
  %p = f32[8,8,256]{2,1,0} parameter(0)
  %c = f32[] constant(0)
  ROOT %reduce.2 = f32[8,256]{1,0} reduce(%p, %c), dimensions={0}, to_apply=%add_comp, metadata={op_name="jit(g)/fc1/dot_general"}
}

%fused_mv (w: f32[64,32], x: f32[32]) -> f32[64] {
  %w = f32[64,32]{1,0} parameter(0)
  %x = f32[32]{0} parameter(1)
  %e = f32[32]{0} exponential(%x), metadata={op_name="jit(g)/pre/exp"}
  %b = f32[64,32]{1,0} broadcast(%e), dimensions={1}, metadata={op_name="jit(g)/fc2/dot_general"}
  %m = f32[64,32]{1,0} multiply(%b, %w), metadata={op_name="jit(g)/fc2/dot_general"}
  %c = f32[] constant(0)
  %r = f32[64]{0} reduce(%m, %c), dimensions={1}, to_apply=%add_comp, metadata={op_name="jit(g)/fc2/dot_general"}
  ROOT %t = f32[64]{0} tanh(%r), metadata={op_name="jit(g)/fc2/tanh"}
}

ENTRY %main (a: f32[8,8,256], w: f32[64,32], x: f32[32]) -> (f32[8,256], f32[64]) {
  %a = f32[8,8,256]{2,1,0} parameter(0)
  %w = f32[64,32]{1,0} parameter(1)
  %x = f32[32]{0} parameter(2)
  %loop_reduce_fusion = f32[8,256]{1,0} fusion(%a), kind=kLoop, calls=%fused_reduce
  %input_reduce_fusion = f32[64]{0} fusion(%w, %x), kind=kInput, calls=%fused_mv
  ROOT %tuple = (f32[8,256]{1,0}, f32[64]{0}) tuple(%loop_reduce_fusion, %input_reduce_fusion)
}
"""


def test_a_reduce_of_a_dot_name_is_a_product_only_over_a_multiply_of_that_name():
    # a split-K GEMM's partial sums (reduce of a parameter) are no product; a matrix-vector dot
    # rewritten as multiply + reduce is one, with its operand's exp a prologue, the tanh after
    # the reduce an epilogue
    assert H.kernel_roles(SPLIT_K) == {
        "loop_reduce_fusion": ("split-k", {}),
        "input_reduce_fusion": ("gemm", {"pre/exp": "prologue", "fc2/tanh": "epilogue"})}


def test_params_arg_compiles_an_inference_program_with_its_weights_as_arguments():
    # --params-arg: cnn_infer(x) becomes cnn(params, x) with params (position 0) as weights;
    # a train step already takes them as arguments
    assert H.program("cnn_infer", "cnn", True) == ("cnn", (0,))
    assert H.program("cnn_infer", "cnn", False) == ("cnn_infer", ())
    assert H.program("cnn_train_step", "cnn", True) == ("cnn_train_step", ())
    params, x = H.program_args("cnn_infer", "cnn", 8, params_arg=True)
    assert x.shape == (8, 3, 32, 32) and params["conv1"]["w"].shape[0] == params["bn1"]["mean"].shape[0]
    assert len(H.program_args("cnn_infer", "cnn", 8)) == 1
