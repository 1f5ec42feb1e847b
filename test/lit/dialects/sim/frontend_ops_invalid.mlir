// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s

%s = sim.input "s" : tensor<8x4xf32>
%w, %i = sim.topk %s k = 5 : tensor<8x4xf32> -> (tensor<8x5xf32>, tensor<8x5xi64>)
// CHECK: error: 'sim.topk' op k = 5 must be in [1, 4] (the last dim)

// -----

%s = sim.input "s" : tensor<8x4xf32>
%w, %i = sim.topk %s k = 2 : tensor<8x4xf32> -> (tensor<8x2xf32>, tensor<8x2xf32>)
// CHECK: error: 'sim.topk' op indices must have an integer element type

// -----

%x = sim.input "x" : tensor<8x16xbf16>
%i = sim.input "i" : tensor<6x2xi64>
%d = sim.moe_dispatch %x, %i : (tensor<8x16xbf16>, tensor<6x2xi64>) -> tensor<4x4x16xbf16>
// CHECK: error: 'sim.moe_dispatch' op token counts or hidden sizes differ: input [8, 16], indices [6, 2], result [4, 4, 16]

// -----

%e = sim.input "e" : tensor<4x4x16xbf16>
%i = sim.input "i" : tensor<8x2xi64>
%y = sim.moe_combine %e, %i : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x32xbf16>
// CHECK: error: 'sim.moe_combine' op result must be [8, 16] (tokens x hidden), got [8, 32]

// -----

%e = sim.input "e" : tensor<4x4x16xbf16>
%i = sim.input "i" : tensor<8x2xi64>
%w = sim.input "w" : tensor<8x3xf32>
%y = sim.moe_combine %e, %i weights %w : tensor<8x3xf32> : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x16xbf16>
// CHECK: error: 'sim.moe_combine' op weights must have the shape of indices [8, 2]

// -----

%k = sim.input "k" : tensor<1x1x2x8xbf16>
%v = sim.input "v" : tensor<1x2x2x8xbf16>
sim.kv_cache_write %k, %v : tensor<1x1x2x8xbf16>, tensor<1x2x2x8xbf16>
// CHECK: error: 'sim.kv_cache_write' op k and v must be [batch, seq, kv heads, head_dim] with equal batch, seq, heads

// -----

%k = sim.input "k" : tensor<1x4x2x8xbf16>
%ka, %va = sim.kv_cache_read %k, %k : tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16> -> tensor<1x3x2x8xbf16>, tensor<1x3x2x8xbf16>
// CHECK: error: 'sim.kv_cache_read' op k: result must be [1, context >= 4, heads, head_dim] matching the new entries, got [1, 3, 2, 8]
