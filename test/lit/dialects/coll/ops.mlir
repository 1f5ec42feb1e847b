// RUN: charon-opt %s | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | charon-opt | filecheck %s

builtin.module {
  coll.grid @mesh(axes = ["dp", "pp", "tp"], shape = 4x2x8)
  // CHECK: coll.grid @mesh(axes = ["dp", "pp", "tp"], shape = 4x2x8)
  %x = sim.input "x" : tensor<16x64xbf16>
  %ar = coll.all_reduce %x on @mesh ["tp"] : tensor<16x64xbf16>
  // CHECK: %[[AR:.*]] = coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<16x64xbf16>
  %ag = coll.all_gather %ar on @mesh ["tp"] axis 0 : tensor<16x64xbf16> -> tensor<128x64xbf16>
  // CHECK-NEXT: %[[AG:.*]] = coll.all_gather %[[AR]] on @mesh ["tp"] axis 0 : tensor<16x64xbf16> -> tensor<128x64xbf16>
  %rs = coll.reduce_scatter %ag on @mesh ["dp", "tp"] axis 0 : tensor<128x64xbf16> -> tensor<4x64xbf16>
  // CHECK-NEXT: %[[RS:.*]] = coll.reduce_scatter %[[AG]] on @mesh ["dp", "tp"] axis 0 : tensor<128x64xbf16> -> tensor<4x64xbf16>
  %a2a = coll.all_to_all %x on @mesh ["tp"] split 0 concat 1 : tensor<16x64xbf16> -> tensor<2x512xbf16>
  // CHECK-NEXT: coll.all_to_all %{{.*}} on @mesh ["tp"] split 0 concat 1 : tensor<16x64xbf16> -> tensor<2x512xbf16>
  %tok = sim.input "tok" : tensor<64x4x32xbf16>
  %disp = coll.all_to_all %tok on @mesh ["tp"] split 0 concat 1 {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64, token_replicas = 2 : i64} : tensor<64x4x32xbf16> -> tensor<8x32x32xbf16>
  // CHECK: coll.all_to_all %{{.*}} on @mesh ["tp"] split 0 concat 1 {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64, token_replicas = 2 : i64} : tensor<64x4x32xbf16> -> tensor<8x32x32xbf16>
  %bc = coll.broadcast %x on @mesh ["dp"] : tensor<16x64xbf16>
  // CHECK-NEXT: coll.broadcast %{{.*}} on @mesh ["dp"] : tensor<16x64xbf16>
  coll.send %x on @mesh ["pp"] shift 1 : tensor<16x64xbf16>
  // CHECK-NEXT: coll.send %{{.*}} on @mesh ["pp"] shift 1 : tensor<16x64xbf16>
  %r = coll.recv on @mesh ["pp"] shift -1 : tensor<16x64xbf16>
  // CHECK-NEXT: coll.recv on @mesh ["pp"] shift -1 : tensor<16x64xbf16>
  // a group of some positions along one axis: the first and last pipeline stage
  %ends = coll.all_reduce %x on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<16x64xbf16>
  // CHECK-NEXT: coll.all_reduce %{{.*}} on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<16x64xbf16>
}
