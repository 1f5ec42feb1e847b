// A kernel over a tensor with a dimension of 0 is refused where the file is read
// (it priced at zero and ran, exit 0); the optimizer step may hold a [0, ...]
// stack (a pipeline stage with none of a repeat's layers).
// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not charon-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

%x = sim.input "x" : tensor<0x4096xbf16>
%w = sim.param "w" : tensor<16384x4096xbf16>
%h = sim.matmul %x, %w {transpose_rhs} : (tensor<0x4096xbf16>, tensor<16384x4096xbf16>) -> tensor<0x16384xbf16>
// CHECK: zero_dim.mlir:9:1: error: 'sim.matmul' op computes on an empty tensor: tensor<0x4096xbf16> has a dimension of 0
// EXIT: zero_dim.mlir:9:1: error: 'sim.matmul' op computes on an empty tensor

// -----

%x = sim.input "x" : tensor<8x0xbf16>
%y = sim.elementwise "gelu" %x : tensor<8x0xbf16> -> tensor<8x0xbf16>
// CHECK: error: 'sim.elementwise' op computes on an empty tensor: tensor<8x0xbf16> has a dimension of 0

// -----

// an opaque aten op may: HF slices an empty pass-through half (Phi-3's full rotary) and concatenates it back
%r = sim.input "r" : tensor<1x4x1x16xbf16>
%e = sim.generic "aten.slice"(%r) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x4x1x16xbf16>) -> tensor<1x4x1x0xbf16>
%c = sim.generic "aten.cat"(%r, %e) {flop_count = 0.0 : f64, byte_count = 128.0 : f64} : (tensor<1x4x1x16xbf16>, tensor<1x4x1x0xbf16>) -> tensor<1x4x1x16xbf16>
// CHECK: sim.generic "aten.cat"

// -----

%w = sim.param "layers.w" : tensor<0x8x8xbf16>
%g = sim.input "layers.w.grad" : tensor<0x8x8xbf16>
sim.optimizer_step "adamw" (%w : tensor<0x8x8xbf16>) grads (%g : tensor<0x8x8xbf16>)
// CHECK: sim.optimizer_step "adamw"
