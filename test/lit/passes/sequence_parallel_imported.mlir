// RUN: charon-opt %s -p 'sequence-parallel' | filecheck %s
// RUN: charon-opt %s -p 'sequence-parallel{tp-comm-overlap=true}' | filecheck %s --check-prefix=OVERLAP

// A module imported already sequence-parallel (the frontend's Megatron-Core
// model at tp 2, marked `sim.sequence_parallel`): its all-gather before the
// column-parallel GEMM and reduce-scatter after the row-parallel one are the
// model's own; the pass leaves them, and with tp-comm-overlap only marks the
// module for cost-annotate.

// CHECK:        builtin.module attributes {sim.sequence_parallel} {
// CHECK-NEXT:   coll.grid @mesh(axes = ["tp"], shape = 2)
// CHECK-NEXT:   %[[X:.*]] = sim.input "x" : tensor<15x64xbf16>
// CHECK-NEXT:   %[[WQ:.*]] = sim.input "wq" : tensor<32x64xbf16>
// CHECK-NEXT:   %[[WO:.*]] = sim.input "wo" : tensor<64x32xbf16>
// CHECK-NEXT:   %[[G:.*]] = coll.all_gather %[[X]] on @mesh ["tp"] axis 0 : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   %[[H:.*]] = sim.matmul %[[G]], %[[WQ]] {transpose_rhs} : (tensor<30x64xbf16>, tensor<32x64xbf16>) -> tensor<30x32xbf16>
// CHECK-NEXT:   %[[O:.*]] = sim.matmul %[[H]], %[[WO]] {transpose_rhs} : (tensor<30x32xbf16>, tensor<64x32xbf16>) -> tensor<30x64xbf16>
// CHECK-NEXT:   coll.reduce_scatter %[[O]] on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-NOT:    coll.

// OVERLAP:      builtin.module attributes {sim.sequence_parallel, sim.tp_comm_overlap} {

builtin.module attributes {sim.sequence_parallel} {
  coll.grid @mesh(axes = ["tp"], shape = 2)
  %x = sim.input "x" : tensor<15x64xbf16>
  %wq = sim.input "wq" : tensor<32x64xbf16>
  %wo = sim.input "wo" : tensor<64x32xbf16>
  %g = coll.all_gather %x on @mesh ["tp"] axis 0 : tensor<15x64xbf16> -> tensor<30x64xbf16>
  %h = sim.matmul %g, %wq {transpose_rhs} : (tensor<30x64xbf16>, tensor<32x64xbf16>) -> tensor<30x32xbf16>
  %o = sim.matmul %h, %wo {transpose_rhs} : (tensor<30x32xbf16>, tensor<64x32xbf16>) -> tensor<30x64xbf16>
  %y = coll.reduce_scatter %o on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
}
