// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=1},memory-analysis' | filecheck %s
// RUN: charon-opt %s -p 'recompute{policy=selective},memory-analysis{limit-gb=80}' | filecheck %s --check-prefix=SEL
// RUN: charon-opt %s -p 'recompute{policy=full},memory-analysis{limit-gb=80 grad-bytes=4}' | filecheck %s --check-prefix=FULL
// RUN: charon-opt %s -p 'pipeline{pp=2 microbatches=4},memory-analysis{limit-gb=80}' | filecheck %s --check-prefix=PP
// RUN: not charon-opt %s -p 'memory-analysis{limit-gb=12}' 2>&1 | filecheck %s --check-prefix=OOM
// RUN: not charon-opt %s -p 'memory-analysis{limit-gb=1.2e1}' 2>&1 | filecheck %s --check-prefix=OOM
// RUN: charon-opt %s -p 'recompute{policy=selective},memory-analysis{limit-gb=8e1}' | filecheck %s --check-prefix=SEL
// RUN: not charon-opt %s -p 'pipeline{pp=2 microbatches=4},memory-analysis{limit-gb=10}' 2>&1 | filecheck %s --check-prefix=OOM-PP
// RUN: not charon-opt %s -p 'memory-analysis{limit-gb=-1}' 2>&1 | filecheck %s --check-prefix=BAD-LIMIT
// RUN: not charon-opt %s -p 'memory-analysis{grad-bytes=3}' 2>&1 | filecheck %s --check-prefix=BAD-GRAD
// RUN: charon-opt %s -p 'memory-analysis{limit-gb=80 fp8=true}' | filecheck %s --check-prefix=FP8
// RUN: charon-opt %s -p 'memory-analysis{limit-gb=80 fp8=true fp8-params=true}' | filecheck %s --check-prefix=FP8-PARAMS
// RUN: charon-opt %s -p 'data-parallel{dp=4 zero=3},memory-analysis{limit-gb=80}' | filecheck %s --check-prefix=ZERO3
// RUN: charon-opt %s -p 'data-parallel{dp=4 zero=3},memory-analysis{limit-gb=80 zero3-live-params=100}' | filecheck %s --check-prefix=ZERO3-LIVE
// RUN: not charon-opt %s -p 'memory-analysis{zero3-live-params=-1}' 2>&1 | filecheck %s --check-prefix=BAD-LIVE
// RUN: charon-opt %s -p 'data-parallel{dp=4 zero=3},memory-analysis{limit-gb=80 zero3-keep-gathered=true}' | filecheck %s --check-prefix=ZERO3-KEEP
// RUN: not charon-opt %s -p 'memory-analysis{zero3-keep-gathered=true}' 2>&1 | filecheck %s --check-prefix=BAD-KEEP
// RUN: charon-opt %s -p 'pipeline{pp=2 microbatches=4},memory-analysis{limit-gb=80 keep-stage-outputs=true}' | filecheck %s --check-prefix=PP-KEEP
// RUN: charon-opt %s -p 'data-parallel{dp=4 zero=3},memory-analysis{limit-gb=80 fp32-param-shards=true}' | filecheck %s --check-prefix=ZERO3-FP32
// RUN: not charon-opt %s -p 'memory-analysis{fp32-param-shards=true}' 2>&1 | filecheck %s --check-prefix=BAD-FP32

// Four GPT layers, s = 2048, b = 1, h = 4096, a = 32 (sbh = 8388608), saving
// what Megatron-LM saves. Per layer (Korthikanti et al. 2022):
//   none       sbh (34 + 5as/h) = 114 sbh = 956301312 B
//   selective  34 sbh                      = 285212672 B
//   full       2 sbh                       =  16777216 B
// The forward's yield of the last layer's output, which nothing reads, is not
// kept (a pipeline stage's output: Megatron-LM frees it once sent). Parameters:
// 4 x (12h^2 + 2h) = 805339136, bf16; gradients bf16 (or fp32 with
// grad-bytes=4); Adam: 12 B per parameter.

// CHECK: builtin.module attributes {sim.target = {{.*}}, sim.memory = [#sim.memory<stage = 0, params = 1610678272, grads = 1610678272, optimizer = 9664069632, activations = {{[0-9]+}}, saved_per_microbatch = 3825205248, in_flight = 1, comm_buffers = 0, weight_grad_residual = 0>]}

// Under fp8 (Transformer Engine) the values only GEMMs read back are saved as
// their fp8 cast: the two LayerNorm outputs (QKV and fc1 inputs, 2 sbh each) and
// the GeLU output (fc2 input, 8 sbh) halve, 6 sbh a layer: 3825205248 - 4 x 6 sbh.
// The attention output stays 16-bit (flash attention's backward reads it).
// FP8: saved_per_microbatch = 3623878656
// With fp8-params the layers' GEMM weights (4 x 12h^2) take one byte an element,
// the norms' weights (4 x 2h) two: 805306368 + 65536; gradients and Adam unchanged.
// FP8-PARAMS: sim.memory = [#sim.memory<stage = 0, params = 805371904, grads = 1610678272, optimizer = 9664069632

// SEL: sim.memory = [#sim.memory<stage = 0, {{.*}} saved_per_microbatch = 1140850688, in_flight = 1

// FULL: sim.memory = [#sim.memory<stage = 0, params = 1610678272, grads = 3221356544, {{.*}} saved_per_microbatch = 67108864, in_flight = 1

// 1F1B over two stages: the first holds two micro-batches in flight, the last one.
// PP:      sim.stage [0] attributes {sim.memory = [#sim.memory<stage = 0, params = 805339136, {{.*}} saved_per_microbatch = 1912602624, in_flight = 2
// PP:      sim.stage [1] attributes {sim.memory = [#sim.memory<stage = 1, params = 805339136, {{.*}} saved_per_microbatch = 1912602624, in_flight = 1
// With keep-stage-outputs (PyTorch's pipelining) each stage also keeps the output it
// sent, 2 sbh a micro-batch: 1912602624 + 16777216.
// PP-KEEP: sim.stage [0] attributes {sim.memory = [#sim.memory<stage = 0, params = 805339136, {{.*}} saved_per_microbatch = 1929379840, in_flight = 2

// OOM: charon-opt: error: memory-analysis: stage 0 needs 16.1 GiB of 12.0 GiB: optimizer states 9.0 GiB, activations 4.1 GiB, parameters 1.5 GiB
// OOM-PP: charon-opt: error: memory-analysis: stage 0 needs 10.2 GiB of 10.0 GiB: optimizer states 4.5 GiB, activations 4.2 GiB, parameters 0.8 GiB
// BAD-LIMIT: charon-opt: error: memory-analysis: option 'limit-gb' must be >= 0, got -1
// BAD-GRAD: charon-opt: error: memory-analysis: option 'grad-bytes' must be 2 or 4, got 3

// ZeRO-3 gathers: the largest collective buffer (26214400) plus a whole layer's
// parameters twice (2 x 402653184 + 2 x 16384 of norms) under FSDP's block-by-block
// gathers; with zero3-live-params (DeepSpeed's stage3_max_live_parameters) at most
// that many elements, but never less than the largest weight (4096 x 16384, 134217728).
// ZERO3:       comm_buffers = 831553536,
// ZERO3-LIVE:  comm_buffers = 160432128,
// BAD-LIVE:    charon-opt: error: memory-analysis: option 'zero3-live-params' must be >= 0, got -1

// FSDP2 under pipelining (zero3-keep-gathered): the shards (1610678272 / 4) plus every
// layer kept gathered (1610678272), the gradients unsharded in fp32 (4 x 805339136
// elements), and no per-layer gather buffer beside them (the collective's 26214400 alone).
// ZERO3-KEEP:  #sim.memory<stage = 0, params = 2013347840, grads = 3221356544, optimizer = 2416017408, {{.*}} comm_buffers = 26214400,
// BAD-KEEP:    charon-opt: error: memory-analysis: option 'zero3-keep-gathered' needs ZeRO-3 (data-parallel{zero=3}), the module has zero 0

// FSDP2's shards are the fp32 master copy (fp32-param-shards): 4 x 805339136 / 4 of
// parameters, Adam's m and v alone 8 x 805339136 / 4 (bf16 shards: 2 x and 12 x).
// ZERO3-FP32:  #sim.memory<stage = 0, params = 805339136, grads = 402669568, optimizer = 1610678272,
// BAD-FP32:    charon-opt: error: memory-analysis: option 'fp32-param-shards' needs ZeRO-3 (data-parallel{zero=3}), the module has zero 0

builtin.module {

  %x0 = sim.input "hidden" : tensor<1x2048x4096xbf16>
  %gin = sim.input "grad_hidden" : tensor<1x2048x4096xbf16>
  %p_ln1 = sim.param "layers.ln1" : tensor<4x4096xbf16>
  %p_wqkv = sim.param "layers.wqkv" : tensor<4x4096x12288xbf16>
  %p_wo = sim.param "layers.wo" : tensor<4x4096x4096xbf16>
  %p_ln2 = sim.param "layers.ln2" : tensor<4x4096xbf16>
  %p_w1 = sim.param "layers.w1" : tensor<4x4096x16384xbf16>
  %p_w2 = sim.param "layers.w2" : tensor<4x16384x4096xbf16>
  %f:13 = sim.phase "forward" -> tensor<1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x4096xi8>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x4096xi8> {
    %r:13 = sim.repeat 4 iter(%x0 : tensor<1x2048x4096xbf16>) slices(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2 : tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>) -> (tensor<1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x4096xi8>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x4096xi8>) {
    ^bb0(%x: tensor<1x2048x4096xbf16>, %ln1: tensor<4096xbf16>, %wqkv: tensor<4096x12288xbf16>, %wo: tensor<4096x4096xbf16>, %ln2: tensor<4096xbf16>, %w1: tensor<4096x16384xbf16>, %w2: tensor<16384x4096xbf16>):
      %n1 = sim.norm "layer" %x, %ln1 : tensor<1x2048x4096xbf16>, tensor<4096xbf16>
      %n1f = sim.view %n1 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %qkv = sim.matmul %n1f, %wqkv : (tensor<1x2048x4096xbf16>, tensor<4096x12288xbf16>) -> tensor<1x2048x12288xbf16>
      %q = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x2048x12288xbf16>) -> tensor<1x2048x32x128xbf16>
      %k = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x2048x12288xbf16>) -> tensor<1x2048x32x128xbf16>
      %v = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x2048x12288xbf16>) -> tensor<1x2048x32x128xbf16>
      %att = sim.attention %q, %k, %v {causal, sim.dropout} : (tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>) -> tensor<1x2048x32x128xbf16>
      %ao = sim.view %att : tensor<1x2048x32x128xbf16> -> tensor<1x2048x4096xbf16>
      %po = sim.matmul %ao, %wo : (tensor<1x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<1x2048x4096xbf16>
      %pr = sim.view %po : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %m1 = sim.generic "bernoulli"(%pr) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x2048x4096xbf16>) -> tensor<1x2048x4096xi8>
      %d1 = sim.elementwise "dropout" %pr, %m1 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xi8> -> tensor<1x2048x4096xbf16>
      %x1 = sim.elementwise "add" %x, %d1 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %n2 = sim.norm "layer" %x1, %ln2 : tensor<1x2048x4096xbf16>, tensor<4096xbf16>
      %n2f = sim.view %n2 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %f1 = sim.matmul %n2f, %w1 : (tensor<1x2048x4096xbf16>, tensor<4096x16384xbf16>) -> tensor<1x2048x16384xbf16>
      %gl = sim.elementwise "gelu" %f1 : tensor<1x2048x16384xbf16> -> tensor<1x2048x16384xbf16>
      %f2 = sim.matmul %gl, %w2 : (tensor<1x2048x16384xbf16>, tensor<16384x4096xbf16>) -> tensor<1x2048x4096xbf16>
      %f2r = sim.view %f2 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %m2 = sim.generic "bernoulli"(%f2r) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x2048x4096xbf16>) -> tensor<1x2048x4096xi8>
      %d2 = sim.elementwise "dropout" %f2r, %m2 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xi8> -> tensor<1x2048x4096xbf16>
      %x2 = sim.elementwise "add" %x1, %d2 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      sim.yield %x2, %x, %n1, %q, %k, %v, %att, %m1, %x1, %n2, %f1, %gl, %m2 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x4096xi8>, tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>, tensor<1x2048x16384xbf16>, tensor<1x2048x16384xbf16>, tensor<1x2048x4096xi8>
    }
    sim.yield %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8, %r#9, %r#10, %r#11, %r#12 : tensor<1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x4096xi8>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x4096xi8>
  }
  %bw:6 = sim.phase "backward" -> tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16> {
    %rb:7 = sim.repeat 4 iter(%gin : tensor<1x2048x4096xbf16>) slices(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2, %f#1, %f#2, %f#3, %f#4, %f#5, %f#6, %f#7, %f#8, %f#9, %f#10, %f#11, %f#12 : tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x32x128xbf16>, tensor<4x1x2048x4096xi8>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x4096xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x16384xbf16>, tensor<4x1x2048x4096xi8>) {reverse} -> (tensor<1x2048x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>) {
    ^bb0(%g: tensor<1x2048x4096xbf16>, %ln1: tensor<4096xbf16>, %wqkv: tensor<4096x12288xbf16>, %wo: tensor<4096x4096xbf16>, %ln2: tensor<4096xbf16>, %w1: tensor<4096x16384xbf16>, %w2: tensor<16384x4096xbf16>, %x: tensor<1x2048x4096xbf16>, %n1: tensor<1x2048x4096xbf16>, %q: tensor<1x2048x32x128xbf16>, %k: tensor<1x2048x32x128xbf16>, %v: tensor<1x2048x32x128xbf16>, %att: tensor<1x2048x32x128xbf16>, %m1: tensor<1x2048x4096xi8>, %x1: tensor<1x2048x4096xbf16>, %n2: tensor<1x2048x4096xbf16>, %f1: tensor<1x2048x16384xbf16>, %gl: tensor<1x2048x16384xbf16>, %m2: tensor<1x2048x4096xi8>):
      %gd2 = sim.elementwise "mul" %g, %m2 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xi8> -> tensor<1x2048x4096xbf16>
      %gd2f = sim.view %gd2 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dgl = sim.matmul %gd2f, %w2 {transpose_rhs} : (tensor<1x2048x4096xbf16>, tensor<16384x4096xbf16>) -> tensor<1x2048x16384xbf16>
      %dw2b = sim.matmul %gl, %gd2f {transpose_lhs} : (tensor<1x2048x16384xbf16>, tensor<1x2048x4096xbf16>) -> tensor<1x16384x4096xbf16>
      %dw2 = sim.reduce "sum" %dw2b [0] : tensor<1x16384x4096xbf16> -> tensor<16384x4096xbf16>
      %df1 = sim.elementwise "gelu_grad" %dgl, %f1 : tensor<1x2048x16384xbf16>, tensor<1x2048x16384xbf16> -> tensor<1x2048x16384xbf16>
      %n2f = sim.view %n2 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dw1b = sim.matmul %n2f, %df1 {transpose_lhs} : (tensor<1x2048x4096xbf16>, tensor<1x2048x16384xbf16>) -> tensor<1x4096x16384xbf16>
      %dw1 = sim.reduce "sum" %dw1b [0] : tensor<1x4096x16384xbf16> -> tensor<4096x16384xbf16>
      %dn2 = sim.matmul %df1, %w1 {transpose_rhs} : (tensor<1x2048x16384xbf16>, tensor<4096x16384xbf16>) -> tensor<1x2048x4096xbf16>
      %dn2r = sim.view %dn2 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dx1n, %dln2 = sim.generic "layer_norm_backward"(%dn2r, %x1, %ln2) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>, tensor<4096xbf16>) -> (tensor<1x2048x4096xbf16>, tensor<4096xbf16>)
      %gx1 = sim.elementwise "add" %g, %dx1n : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %gd1 = sim.elementwise "mul" %gx1, %m1 : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xi8> -> tensor<1x2048x4096xbf16>
      %gd1f = sim.view %gd1 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dao = sim.matmul %gd1f, %wo {transpose_rhs} : (tensor<1x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<1x2048x4096xbf16>
      %aov = sim.view %att : tensor<1x2048x32x128xbf16> -> tensor<1x2048x4096xbf16>
      %dwob = sim.matmul %aov, %gd1f {transpose_lhs} : (tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>) -> tensor<1x4096x4096xbf16>
      %dwo = sim.reduce "sum" %dwob [0] : tensor<1x4096x4096xbf16> -> tensor<4096x4096xbf16>
      %datt = sim.view %dao : tensor<1x2048x4096xbf16> -> tensor<1x2048x32x128xbf16>
      %dq, %dk, %dv = sim.attention_grad %q, %k, %v, %att, %datt {causal} : (tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>) -> (tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>)
      %dqkv = sim.generic "aten.cat"(%dq, %dk, %dv) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>, tensor<1x2048x32x128xbf16>) -> tensor<1x2048x12288xbf16>
      %n1f = sim.view %n1 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dwqkvb = sim.matmul %n1f, %dqkv {transpose_lhs} : (tensor<1x2048x4096xbf16>, tensor<1x2048x12288xbf16>) -> tensor<1x4096x12288xbf16>
      %dwqkv = sim.reduce "sum" %dwqkvb [0] : tensor<1x4096x12288xbf16> -> tensor<4096x12288xbf16>
      %dn1 = sim.matmul %dqkv, %wqkv {transpose_rhs} : (tensor<1x2048x12288xbf16>, tensor<4096x12288xbf16>) -> tensor<1x2048x4096xbf16>
      %dn1r = sim.view %dn1 : tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      %dxn, %dln1 = sim.generic "layer_norm_backward"(%dn1r, %x, %ln1) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16>, tensor<4096xbf16>) -> (tensor<1x2048x4096xbf16>, tensor<4096xbf16>)
      %gx = sim.elementwise "add" %gx1, %dxn : tensor<1x2048x4096xbf16>, tensor<1x2048x4096xbf16> -> tensor<1x2048x4096xbf16>
      sim.yield %gx, %dln1, %dwqkv, %dwo, %dln2, %dw1, %dw2 : tensor<1x2048x4096xbf16>, tensor<4096xbf16>, tensor<4096x12288xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>, tensor<4096x16384xbf16>, tensor<16384x4096xbf16>
    }
    sim.yield %rb#1, %rb#2, %rb#3, %rb#4, %rb#5, %rb#6 : tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2 : tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>) grads(%bw#0, %bw#1, %bw#2, %bw#3, %bw#4, %bw#5 : tensor<4x4096xbf16>, tensor<4x4096x12288xbf16>, tensor<4x4096x4096xbf16>, tensor<4x4096xbf16>, tensor<4x4096x16384xbf16>, tensor<4x16384x4096xbf16>)
    sim.yield
  }
}

