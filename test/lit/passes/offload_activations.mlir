// RUN: charon-opt %s -p 'offload-activations{layers=0}' | filecheck %s --check-prefix=NONE
// RUN: charon-opt %s -p 'offload-activations{layers=4}' | filecheck %s --check-prefix=MARK
// RUN: charon-opt %s -p 'offload-activations{layers=2}' | filecheck %s --check-prefix=FIRST
// RUN: charon-opt %s -p 'offload-activations{layers=4},memory-analysis' | filecheck %s --check-prefix=MEM
// RUN: charon-opt %examples/llama_tiny_step.mlir -p 'offload-activations{layers=1},memory-analysis' | filecheck %s --check-prefix=TINY
// RUN: not charon-opt %s -p 'offload-activations{layers=5}' 2>&1 | filecheck %s --check-prefix=ALL
// RUN: not charon-opt %s -p 'offload-activations{layers=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not charon-opt %S/Inputs/fp8_layers.mlir -p 'offload-activations{layers=1}' 2>&1 | filecheck %s --check-prefix=NO-BACKWARD
// RUN: not charon-opt %examples/mlp.mlir -p 'offload-activations{layers=1}' 2>&1 | filecheck %s --check-prefix=NO-LAYERS
// RUN: not charon-opt %examples/llama_tiny_step.mlir -p 'pipeline{pp=2 microbatches=2},offload-activations{layers=1}' 2>&1 | filecheck %s --check-prefix=PP
// RUN: not charon-opt %s -p 'recompute{policy=full},offload-activations{layers=1}' 2>&1 | filecheck %s --check-prefix=RECOMPUTE

// Two stacks of layers, 3 then 2 (the step at the end of this file). Megatron-Core offloads the first N
// layers of the block, counted across both stacks; each repeat holding some is
// marked with its share, and so is its reverse twin.

// NONE-NOT: sim.cpu_offload

// MARK:      sim.phase "forward"
// MARK:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 3, first = 0, chunk_layers = 5, chunk_offloaded = 4>}
// MARK:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 3, chunk_layers = 5, chunk_offloaded = 4>}
// MARK:      sim.phase "backward"
// MARK:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 3, chunk_layers = 5, chunk_offloaded = 4>, reverse}
// MARK:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 3, first = 0, chunk_layers = 5, chunk_offloaded = 4>, reverse}

// the second stack holds none of the first 2 layers: marked with none, for its
// place among the step's layers (their copies are waited for across both)
// FIRST:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 2, first = 0, chunk_layers = 5, chunk_offloaded = 2>}
// FIRST:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 0, first = 3, chunk_layers = 5, chunk_offloaded = 2>}
// FIRST:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 0, first = 3, chunk_layers = 5, chunk_offloaded = 2>, reverse}
// FIRST:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 2, first = 0, chunk_layers = 5, chunk_offloaded = 2>, reverse}

// A layer of the first stack saves 3 MiB: its input (1 MiB), a GEMM's input,
// which Transformer Engine's handler moves, and the input of its unfused silu
// (2 MiB), untagged, which stays on the GPU; of the second 5 MiB, all moved: its
// input (1 MiB) and its fused SwiGLU's (4 MiB, tagged by Megatron's
// bias_swiglu_impl). The forward also keeps its 1 MiB output. Offloading 4
// layers moves 3 x 1 + 5 = 8 MiB to the host; 12 MiB stay saved on the GPU. The
// peak is the backward's first layer: the 12 MiB, the chunk's last offloaded
// layer reloaded before it (5 MiB: the handler reloads layer k before the
// backward of layer_window_map[k], 4 for k = 3), and the layer's working set
// (8 MiB): 25 MiB. Each offloading repeat and its twin carry the bytes a layer
// sends, which lower-to-events copies.
// MEM: sim.memory = [#sim.memory<stage = 0, params = 39845888, grads = 0, optimizer = 0, activations = 26214400, saved_per_microbatch = 12582912, in_flight = 1, comm_buffers = 0, weight_grad_residual = 0, host_activations = 8388608>]
// MEM:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 3, first = 0, chunk_layers = 5, chunk_offloaded = 4>, sim.cpu_offload_bytes = 1048576 : i64}
// MEM:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 3, chunk_layers = 5, chunk_offloaded = 4>, sim.cpu_offload_bytes = 5242880 : i64}
// MEM:      sim.repeat 2 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 3, chunk_layers = 5, chunk_offloaded = 4>, sim.cpu_offload_bytes = 5242880 : i64, reverse}
// MEM:      sim.repeat 3 {{.*}} {sim.cpu_offload = #sim.cpu_offload<layers = 3, first = 0, chunk_layers = 5, chunk_offloaded = 4>, sim.cpu_offload_bytes = 1048576 : i64, reverse}

// TINY: #sim.memory<{{.*}}saved_per_microbatch = 8347648,{{.*}} host_activations = 2547712>

// ALL: charon-opt: error: offload-activations: option 'layers' (5) must be less than the step's 5 layers (Megatron-Core keeps the last layer's on the GPU)
// NEG: charon-opt: error: offload-activations: option 'layers' must be >= 0, got -1
// NO-BACKWARD: charon-opt: error: offload-activations: the step has no backward phase: a forward-only step saves no activations to offload
// NO-LAYERS: charon-opt: error: offload-activations: the step has no forward sim.repeat of layers whose saved outputs a reverse sim.repeat in backward reads
// PP: charon-opt: error: offload-activations: Megatron-Core has no CPU offloading under pipeline parallelism (pp = 2); use pp = 1
// RECOMPUTE: charon-opt: error: offload-activations: Megatron-Core's CPU offloading does not work when activation recomputation is enabled (recompute policy full)

// A step of two layer stacks (3 dense-like layers with an unfused silu, then 2
// wider ones with a fused SwiGLU), each layer saving its input and its
// activation's input for the backward (1 MiB and 2 MiB
// an iteration in the first stack, 1 MiB and 4 MiB in the second).
builtin.module {
  %x = sim.input "x" : tensor<512x1024xbf16>
  %w1 = sim.param "a.w" {stacked} : tensor<3x1024x1024xbf16>
  %v1 = sim.param "a.v" {stacked} : tensor<3x1024x2048xbf16>
  %w2 = sim.param "b.w" {stacked} : tensor<2x1024x1024xbf16>
  %v2 = sim.param "b.v" {stacked} : tensor<2x1024x4096xbf16>
  %f:5 = sim.phase "forward" -> tensor<512x1024xbf16>, tensor<3x512x1024xbf16>, tensor<3x512x2048xbf16>, tensor<2x512x1024xbf16>, tensor<2x512x4096xbf16> {
    %a:3 = sim.repeat 3 iter(%x : tensor<512x1024xbf16>) slices(%w1, %v1 : tensor<3x1024x1024xbf16>, tensor<3x1024x2048xbf16>) -> (tensor<512x1024xbf16>, tensor<3x512x1024xbf16>, tensor<3x512x2048xbf16>) {
    ^bb0(%h: tensor<512x1024xbf16>, %w: tensor<1024x1024xbf16>, %v: tensor<1024x2048xbf16>):
      %u = sim.matmul %h, %v : (tensor<512x1024xbf16>, tensor<1024x2048xbf16>) -> tensor<512x2048xbf16>
      %s = sim.elementwise "silu" %u : tensor<512x2048xbf16> -> tensor<512x2048xbf16>
      %d = sim.matmul %s, %v {transpose_rhs} : (tensor<512x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<512x1024xbf16>
      sim.yield %d, %h, %u : tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x2048xbf16>
    }
    %b:3 = sim.repeat 2 iter(%a#0 : tensor<512x1024xbf16>) slices(%w2, %v2 : tensor<2x1024x1024xbf16>, tensor<2x1024x4096xbf16>) -> (tensor<512x1024xbf16>, tensor<2x512x1024xbf16>, tensor<2x512x4096xbf16>) {
    ^bb0(%h: tensor<512x1024xbf16>, %w: tensor<1024x1024xbf16>, %v: tensor<1024x4096xbf16>):
      %u = sim.matmul %h, %v : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<512x4096xbf16>
      %s = sim.generic "fused.swiglu"(%u) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<512x4096xbf16>) -> tensor<512x4096xbf16>
      %d = sim.matmul %s, %v {transpose_rhs} : (tensor<512x4096xbf16>, tensor<1024x4096xbf16>) -> tensor<512x1024xbf16>
      sim.yield %d, %h, %u : tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<512x4096xbf16>
    }
    sim.yield %b#0, %a#1, %a#2, %b#1, %b#2 : tensor<512x1024xbf16>, tensor<3x512x1024xbf16>, tensor<3x512x2048xbf16>, tensor<2x512x1024xbf16>, tensor<2x512x4096xbf16>
  }
  %g:2 = sim.phase "backward" -> tensor<3x1024x2048xbf16>, tensor<2x1024x4096xbf16> {
    %dy = sim.elementwise "fill" %f#0 : tensor<512x1024xbf16> -> tensor<512x1024xbf16>
    %gb:2 = sim.repeat 2 iter(%dy : tensor<512x1024xbf16>) slices(%v2, %f#3, %f#4 : tensor<2x1024x4096xbf16>, tensor<2x512x1024xbf16>, tensor<2x512x4096xbf16>) {reverse} -> (tensor<512x1024xbf16>, tensor<2x1024x4096xbf16>) {
    ^bb0(%dh: tensor<512x1024xbf16>, %v: tensor<1024x4096xbf16>, %h: tensor<512x1024xbf16>, %u: tensor<512x4096xbf16>):
      %ds = sim.matmul %dh, %v : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<512x4096xbf16>
      %du = sim.elementwise "mul" %ds, %u : tensor<512x4096xbf16>, tensor<512x4096xbf16> -> tensor<512x4096xbf16>
      %dv = sim.matmul %h, %du {transpose_lhs} : (tensor<512x1024xbf16>, tensor<512x4096xbf16>) -> tensor<1024x4096xbf16>
      %dx = sim.matmul %du, %v {transpose_rhs} : (tensor<512x4096xbf16>, tensor<1024x4096xbf16>) -> tensor<512x1024xbf16>
      sim.yield %dx, %dv : tensor<512x1024xbf16>, tensor<1024x4096xbf16>
    }
    %ga:2 = sim.repeat 3 iter(%gb#0 : tensor<512x1024xbf16>) slices(%v1, %f#1, %f#2 : tensor<3x1024x2048xbf16>, tensor<3x512x1024xbf16>, tensor<3x512x2048xbf16>) {reverse} -> (tensor<512x1024xbf16>, tensor<3x1024x2048xbf16>) {
    ^bb0(%dh: tensor<512x1024xbf16>, %v: tensor<1024x2048xbf16>, %h: tensor<512x1024xbf16>, %u: tensor<512x2048xbf16>):
      %ds = sim.matmul %dh, %v : (tensor<512x1024xbf16>, tensor<1024x2048xbf16>) -> tensor<512x2048xbf16>
      %du = sim.elementwise "mul" %ds, %u : tensor<512x2048xbf16>, tensor<512x2048xbf16> -> tensor<512x2048xbf16>
      %dv = sim.matmul %h, %du {transpose_lhs} : (tensor<512x1024xbf16>, tensor<512x2048xbf16>) -> tensor<1024x2048xbf16>
      %dx = sim.matmul %du, %v {transpose_rhs} : (tensor<512x2048xbf16>, tensor<1024x2048xbf16>) -> tensor<512x1024xbf16>
      sim.yield %dx, %dv : tensor<512x1024xbf16>, tensor<1024x2048xbf16>
    }
    sim.yield %ga#1, %gb#1 : tensor<3x1024x2048xbf16>, tensor<2x1024x4096xbf16>
  }
}
