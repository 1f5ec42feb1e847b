// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s

coll.grid @mesh(axes = ["tp", "tp"], shape = 2x2)
// CHECK: error: 'coll.grid' op axis names must be distinct, got ['tp', 'tp']

// -----

coll.grid @mesh(axes = ["tp"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_reduce %x on @mesh ["dp"] : tensor<16x64xbf16>
// CHECK: error: 'coll.all_reduce' op axis 'dp' is not an axis of grid @mesh (['tp'])

// -----

%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_reduce %x on @nowhere ["tp"] : tensor<16x64xbf16>
// CHECK: error: 'coll.all_reduce' op grid @nowhere is not a coll.grid in scope

// -----

coll.grid @mesh(axes = ["tp"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_gather %x on @mesh ["tp"] axis 1 : tensor<16x64xbf16> -> tensor<64x64xbf16>
// CHECK: error: 'coll.all_gather' op result shape must be [16, 256] (axis 1 x group size 4), got [64, 64]

// -----

coll.grid @mesh(axes = ["tp"], shape = 3)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.reduce_scatter %x on @mesh ["tp"] axis 0 : tensor<16x64xbf16> -> tensor<5x64xbf16>
// CHECK: error: 'coll.reduce_scatter' op input dim 0 (16) is not divisible by the group size 3

// -----

coll.grid @mesh(axes = ["ep"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_to_all %x on @mesh ["ep"] split 0 concat 0 : tensor<16x64xbf16> -> tensor<4x64xbf16>
// CHECK: error: 'coll.all_to_all' op result shape must be [16, 64], got [4, 64]

// -----

coll.grid @mesh(axes = ["pp", "tp"], shape = 2x2)
%x = sim.input "x" : tensor<16x64xbf16>
coll.send %x on @mesh ["pp", "tp"] shift 1 : tensor<16x64xbf16>
// CHECK: error: 'coll.send' op point-to-point ops take exactly one grid axis

// -----

coll.grid @mesh(axes = ["tp"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_reduce %x on @mesh ["tp", "tp"] : tensor<16x64xbf16>
// CHECK: error: 'coll.all_reduce' op grid axes must be distinct, got ['tp', 'tp']

// -----

coll.grid @mesh(axes = ["pp"], shape = 2)
%x = sim.input "x" : tensor<16x64xbf16>
coll.send %x on @mesh ["pp"] shift 0 : tensor<16x64xbf16>
// CHECK: error: 'coll.send' op shift must be nonzero and within the axis (2 ranks), got 0

// -----

coll.grid @mesh(axes = ["pp"], shape = 2)
%r = coll.recv on @mesh ["pp"] shift 100 : tensor<16x64xbf16>
// CHECK: error: 'coll.recv' op shift must be nonzero and within the axis (2 ranks), got 100

// -----

coll.grid @mesh(axes = ["pp", "tp"], shape = 4x2)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_reduce %x on @mesh ["pp", "tp"] {subgroup = array<i64: 0, 3>} : tensor<16x64xbf16>
// CHECK: error: 'coll.all_reduce' op a subgroup takes exactly one grid axis, got ['pp', 'tp']

// -----

coll.grid @mesh(axes = ["pp"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
%y = coll.all_reduce %x on @mesh ["pp"] {subgroup = array<i64: 0, 4>} : tensor<16x64xbf16>
// CHECK: error: 'coll.all_reduce' op subgroup must be 2 or more distinct positions along 'pp' (0..3), got [0, 4]

// -----

coll.grid @mesh(axes = ["pp"], shape = 4)
%x = sim.input "x" : tensor<16x64xbf16>
coll.send %x on @mesh ["pp"] shift 1 {subgroup = array<i64: 0, 3>} : tensor<16x64xbf16>
// CHECK: error: 'coll.send' op point-to-point ops take no subgroup (the shift names the peer)

// -----

coll.grid @mesh(axes = ["tp"], shape = 2)
coll.grid @mesh2(axes = ["dp"], shape = 4)
// CHECK: invalid.mlir:91:1: error: 'coll.grid' op a module holds one coll.grid

// -----

coll.grid @mesh(axes = ["ep"], shape = 4)
%x = sim.input "x" : tensor<16x4x64xbf16>
%y = coll.all_to_all %x on @mesh ["ep"] split 0 concat 1 {groups = 4 : i64, groups_per_token = 2 : i64} : tensor<16x4x64xbf16> -> tensor<4x16x64xbf16>
// CHECK: error: 'coll.all_to_all' op groups and groups_per_token come together, with top_k

// -----

coll.grid @mesh(axes = ["ep"], shape = 4)
%x = sim.input "x" : tensor<16x4x64xbf16>
%y = coll.all_to_all %x on @mesh ["ep"] split 0 concat 1 {top_k = 8 : i64, groups = 4 : i64, groups_per_token = 1 : i64} : tensor<16x4x64xbf16> -> tensor<4x16x64xbf16>
// CHECK: error: 'coll.all_to_all' op groups (4) must divide the experts (16) and groups_per_token (1) <= groups hold top_k (8) experts

// -----

coll.grid @mesh(axes = ["ep"], shape = 4)
%x = sim.input "x" : tensor<4x16x64xbf16>
%y = coll.all_to_all %x on @mesh ["ep"] split 1 concat 2 {top_k = 2 : i64} : tensor<4x16x64xbf16> -> tensor<4x4x256xbf16>
// CHECK: error: 'coll.all_to_all' op routing attributes need the experts on dim 0 (split 0 or concat 0)

