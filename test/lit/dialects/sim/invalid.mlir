// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.matmul %a, %a : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: invalid.mlir:4:1: error: 'sim.matmul' op contracting dims differ: lhs K = 8, rhs K = 4

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%w = sim.input "w" : tensor<16x8xbf16>
%b = sim.matmul %a, %w {transpose_rhs} : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
// CHECK: error: 'sim.matmul' op result shape must be [4, 16] (batch x M x N), got [4, 8]

// -----

%a = sim.input "a" : tensor<2x4x8xbf16>
%w = sim.input "w" : tensor<3x8x8xbf16>
%b = sim.matmul %a, %w : (tensor<2x4x8xbf16>, tensor<3x8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK: error: 'sim.matmul' op batch dims differ: lhs [2], rhs [3]

// -----

%a = sim.input "a" : tensor<2x4x8xbf16>
%w = sim.input "w" : tensor<8x8xbf16>
%b = sim.matmul %a, %w {grouped} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK: error: 'sim.matmul' op grouped needs batched operands (one GEMM per batch index), got ranks 3 and 2

// -----

%q = sim.input "q" : tensor<1x16x6x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal} : (tensor<1x16x6x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x6x64xbf16>
// CHECK: error: 'sim.attention' op q heads (6) must be a multiple of kv heads (4)

// -----

%q = sim.input "q" : tensor<1x32x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal} : (tensor<1x32x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x32x8x64xbf16>
// CHECK: error: 'sim.attention' op causal attention needs q seq (32) <= kv seq (16)

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {window = 4 : i64} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a window (4) must be >= 1 and needs causal attention

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal, window = 0 : i64} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a window (0) must be >= 1 and needs causal attention

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal, chunk = 0 : i64} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a chunk (0) must be >= 1 and needs causal attention

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {chunk = 8 : i64} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a chunk (8) must be >= 1 and needs causal attention

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal, window = 4 : i64, chunk = 8 : i64} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a chunk and a window exclude each other: a query sees its chunk or its window

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x4x64xbf16>
// CHECK: error: 'sim.attention' op result shape must be [1, 16, 8, 64] [batch, q seq, q heads, v head_dim], got [1, 16, 4, 64]

// -----

%t = sim.param "t" : tensor<100x64xbf16>
%ids = sim.input "ids" : tensor<2x8xbf16>
%e = sim.embedding %t, %ids : (tensor<100x64xbf16>, tensor<2x8xbf16>) -> tensor<2x8x64xbf16>
// CHECK: error: 'sim.embedding' op ids must have an integer element type

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%w = sim.param "w" : tensor<32xbf16>
%n = sim.norm "rms" %x, %w : tensor<4x64xbf16>, tensor<32xbf16>
// CHECK: error: 'sim.norm' op weight shape must be [64] (the input's last dim), got [32]

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%y = sim.input "y" : tensor<3x64xbf16>
%z = sim.elementwise "add" %x, %y : tensor<4x64xbf16>, tensor<3x64xbf16> -> tensor<4x64xbf16>
// CHECK: error: 'sim.elementwise' op input #1 shape [3, 64] does not broadcast to result [4, 64]

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%r = sim.reduce "sum" %x [1] : tensor<4x64xbf16> -> tensor<64xbf16>
// CHECK: error: 'sim.reduce' op result shape must be [4] or [4, 1], got [64]

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%s = sim.softmax %x dim 2 : tensor<4x64xbf16>
// CHECK: error: 'sim.softmax' op dim 2 out of range for rank 2

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%v = sim.view %x : tensor<4x64xbf16> -> tensor<4x32xbf16>
// CHECK: error: 'sim.view' op a view keeps the element count: 256 elements in, 128 out

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%v = sim.view %x {dims = [[1], [0], [2]]} : tensor<4x64xbf16> -> tensor<64x2x2xbf16>
// CHECK: error: 'sim.view' op dims names an input dim outside 0..1

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%v = sim.view %x {dims = [[1], [0]]} : tensor<4x64xbf16> -> tensor<64x2x2xbf16>
// CHECK: error: 'sim.view' op dims has 2 entries for a rank-3 result

// -----

%x = sim.input "x" : tensor<4xbf16>
%g = sim.generic "aten.foo"(%x) {flop_count = -1.0 : f64, byte_count = 0.0 : f64} : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: error: 'sim.generic' op flop_count must be finite and >= 0, got -1.0

// -----

%x = sim.input "x" : tensor<4xbf16>
%g = sim.generic "aten.foo"(%x) {flop_count = 0x7FF0000000000000 : f64, byte_count = 0.0 : f64} : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: error: 'sim.generic' op flop_count must be finite and >= 0, got inf

// -----

%x = sim.input "x" : tensor<4xbf16>
%g = sim.generic "aten.foo"(%x) {flop_count = 0.0 : f64, byte_count = 0x7FF8000000000000 : f64} : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: error: 'sim.generic' op byte_count must be finite and >= 0, got nan

// -----

%p = sim.param "p" : tensor<4x4xbf16>
%g = sim.input "g" : tensor<4x2xbf16>
sim.optimizer_step "adamw"(%p : tensor<4x4xbf16>) grads(%g : tensor<4x2xbf16>)
// CHECK: error: 'sim.optimizer_step' op param #0 and grad #0 shapes differ

// -----

%x = sim.input "x" : tensor<4xbf16>
%w = sim.param "w" : tensor<2x4x4xbf16>
%r = sim.repeat 3 iter(%x : tensor<4xbf16>) slices(%w : tensor<2x4x4xbf16>) -> (tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
  sim.yield %h : tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op sliced operand #0 must be [3] + block argument shape [4, 4], got [2, 4, 4]

// -----

%x = sim.input "x" : tensor<4xbf16>
%r:2 = sim.repeat 3 iter(%x : tensor<4xbf16>) slices( : ) -> (tensor<4xbf16>, tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>):
  sim.yield %h, %h : tensor<4xbf16>, tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op stacked result #1 must be [3] + yielded shape [4]

// -----

%x = sim.input "x" : tensor<4xbf16>
%y = sim.elementwise "silu" %z : tensor<4xbf16> -> tensor<4xbf16>
%z = sim.elementwise "neg" %x : tensor<4xbf16> -> tensor<4xbf16>
// CHECK: error: 'sim.elementwise' op operand %z is used before it is defined

// -----

%x = sim.input "x" : tensor<4xbf16>
sim.phase "forward" {
  %y = sim.elementwise "silu" %z : tensor<4xbf16> -> tensor<4xbf16>
  %z = sim.elementwise "neg" %x : tensor<4xbf16> -> tensor<4xbf16>
  sim.yield
}
// CHECK: error: 'sim.elementwise' op operand %z is used before it is defined

// -----

%p = sim.param "p" {role = "expert"} : tensor<4x4xbf16>
// CHECK: error: 'sim.param' op "expert" should be of base attribute sim.role

// -----

%p = sim.param "p" {role = #sim.role<head>} : tensor<4xbf16>
// CHECK: error: 'sim.param' op a parameter of role 'head' needs two dims at least, got tensor<4xbf16>

// -----

%p = sim.param "p" {role = #sim.role<expert>} : tensor<8xbf16>
// CHECK: error: 'sim.param' op a parameter of role 'expert' needs two dims at least, got tensor<8xbf16>

// -----

%p = sim.param "p" {role = #sim.role<embedding>, split = #sim.split<column>} : tensor<16x4xbf16>
// CHECK: error: 'sim.param' op a parameter of role 'embedding' is split on the vocabulary, not by 'column'

// -----

%p = sim.param "p" {split = "row"} : tensor<4x4xbf16>
// CHECK: error: 'sim.param' op "row" should be of base attribute sim.split

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal, kernel = #sim<attention_kernel "flash3">} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: error: 'sim.attention' op a kernel (flash3) runs a flash attention only

// -----

%a = sim.input "a" : tensor<4xbf16>
%b = "sim.off_stage"(%a) : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK: error: 'sim.off_stage' op Expected 0 operands, but got 1

// -----

sim.stage [0] attributes {sim.node_kind = 3 : i64} {
  %a = sim.input "a" : tensor<4xbf16>
}
// CHECK: error: 'sim.stage' op sim.node_kind must be a node kind's name (a non-empty string), got 3 : i64

// -----

%w = sim.param "w" {stacked} : tensor<bf16>
// CHECK: error: 'sim.param' op a stacked parameter needs a leading layers dim, got tensor<bf16>
