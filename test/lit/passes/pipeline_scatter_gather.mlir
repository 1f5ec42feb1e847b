// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'shard-tensor{tp=2},pipeline{pp=2 scatter-gather=true}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'shard-tensor{tp=2},pipeline{pp=2}' | filecheck %s --check-prefix=WHOLE

// Megatron-LM's scatter_gather_tensors_in_pipeline on the imported tiny Llama
// (tp 2): an activation every tp rank holds whole (1x24x64) crosses stages as the
// rank's 1/tp slice and is all-gathered over tp on arrival, forward and backward.
// CHECK:      sim.stage [0] {
// CHECK:        %[[OUT:.*]] = sim.generic "p2p_scatter"(%{{.*}}) {{.*}} : (tensor<1x24x64xbf16>) -> tensor<768xbf16>
// CHECK-NEXT:   coll.send %[[OUT]] on @mesh ["pp"] shift 1 : tensor<768xbf16>
// CHECK:        %[[GRAD:.*]] = coll.recv on @mesh ["pp"] shift 1 : tensor<768xbf16>
// CHECK-NEXT:   %[[FULL:.*]] = coll.all_gather %[[GRAD]] on @mesh ["tp"] axis 0 : tensor<768xbf16> -> tensor<1536xbf16>
// CHECK-NEXT:   sim.view %[[FULL]] : tensor<1536xbf16> -> tensor<1x24x64xbf16>
// CHECK:      sim.stage [1] {
// CHECK:        %[[ACT:.*]] = coll.recv on @mesh ["pp"] shift -1 : tensor<768xbf16>
// CHECK-NEXT:   coll.all_gather %[[ACT]] on @mesh ["tp"] axis 0 : tensor<768xbf16> -> tensor<1536xbf16>
// CHECK:        sim.generic "p2p_scatter"
// CHECK-NEXT:   coll.send %{{.*}} on @mesh ["pp"] shift -1 : tensor<768xbf16>

// Without the option the whole activation crosses, and nothing is gathered.
// WHOLE-NOT:  p2p_scatter
// WHOLE:      coll.send %{{.*}} on @mesh ["pp"] shift 1 : tensor<1x24x64xbf16>
// WHOLE-NOT:  coll.all_gather %{{.*}} on @mesh ["tp"] axis 0 : tensor<768xbf16>
