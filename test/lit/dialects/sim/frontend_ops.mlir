// RUN: charon-opt %s | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | charon-opt | filecheck %s

// The ops the torch frontend adds: MoE routing (top-k, dispatch, combine, the
// experts' grouped GEMM) and
// the KV cache of a serving step.

builtin.module {
  %x = sim.input "x" : tensor<8x16xbf16>
  %scores = sim.input "scores" : tensor<8x4xf32>
  // CHECK:      %[[X:.*]] = sim.input "x" : tensor<8x16xbf16>
  // CHECK-NEXT: %[[S:.*]] = sim.input "scores" : tensor<8x4xf32>

  %w, %idx = sim.topk %scores k = 2 : tensor<8x4xf32> -> (tensor<8x2xf32>, tensor<8x2xi64>)
  // CHECK-NEXT: %[[W:.*]], %[[IDX:.*]] = sim.topk %[[S]] k = 2 : tensor<8x4xf32> -> (tensor<8x2xf32>, tensor<8x2xi64>)

  %d = sim.moe_dispatch %x, %idx : (tensor<8x16xbf16>, tensor<8x2xi64>) -> tensor<4x4x16xbf16>
  // CHECK-NEXT: %[[D:.*]] = sim.moe_dispatch %[[X]], %[[IDX]] : (tensor<8x16xbf16>, tensor<8x2xi64>) -> tensor<4x4x16xbf16>

  // the experts' GEMM, one per expert (group-expert-gemms)
  %we = sim.input "experts" : tensor<4x16x16xbf16>
  %e = sim.matmul %d, %we {transpose_rhs, grouped} : (tensor<4x4x16xbf16>, tensor<4x16x16xbf16>) -> tensor<4x4x16xbf16>
  // CHECK-NEXT: %[[WE:.*]] = sim.input "experts" : tensor<4x16x16xbf16>
  // CHECK-NEXT: sim.matmul %[[D]], %[[WE]] {transpose_rhs, grouped} : (tensor<4x4x16xbf16>, tensor<4x16x16xbf16>) -> tensor<4x4x16xbf16>

  %y = sim.moe_combine %d, %idx weights %w : tensor<8x2xf32> : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x16xbf16>
  // CHECK-NEXT: sim.moe_combine %[[D]], %[[IDX]] weights %[[W]] : tensor<8x2xf32> : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x16xbf16>

  %dx = sim.moe_combine %d, %idx : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x16xbf16>
  // CHECK-NEXT: sim.moe_combine %[[D]], %[[IDX]] : (tensor<4x4x16xbf16>, tensor<8x2xi64>) -> tensor<8x16xbf16>

  %k = sim.input "k" : tensor<1x1x2x8xbf16>
  %v = sim.input "v" : tensor<1x1x2x8xbf16>
  sim.kv_cache_write %k, %v : tensor<1x1x2x8xbf16>, tensor<1x1x2x8xbf16>
  // CHECK:      sim.kv_cache_write %{{.*}}, %{{.*}} : tensor<1x1x2x8xbf16>, tensor<1x1x2x8xbf16>

  %ka, %va = sim.kv_cache_read %k, %v : tensor<1x1x2x8xbf16>, tensor<1x1x2x8xbf16> -> tensor<1x9x2x8xbf16>, tensor<1x9x2x8xbf16>
  // CHECK-NEXT: sim.kv_cache_read %{{.*}}, %{{.*}} : tensor<1x1x2x8xbf16>, tensor<1x1x2x8xbf16> -> tensor<1x9x2x8xbf16>, tensor<1x9x2x8xbf16>
}
