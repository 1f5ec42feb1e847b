// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=8}' | filecheck %s
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=2 layers=3,5}' | filecheck %s --check-prefix=UNEVEN
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=2 vpp=2 schedule=interleaved microbatches=4}' | filecheck %s --check-prefix=VPP
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=16}' 2>&1 | filecheck %s --check-prefix=TOO-DEEP
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'pipeline{pp=4 microbatches=3}' 2>&1 | filecheck %s --check-prefix=FEW-MB

// The first stage keeps the embedding, sends activations forward and receives
// gradients; the two middle stages share one sim.stage; the last keeps the head.
// CHECK:      builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 4, vpp = 1, schedule = "1f1b", microbatches = 8, layers = [2, 2, 2, 2]>}
// CHECK-NEXT:   coll.grid @mesh(axes = ["pp"], shape = 4)
// CHECK-NEXT:   sim.stage [0] {
// CHECK:          %[[WS0:.*]] = sim.param "layers.w" : tensor<2x64x64xbf16>
// CHECK:          sim.embedding
// CHECK:          sim.repeat 2 iter(%{{.*}} : tensor<1x64x64xbf16>) slices(%[[WS0]] : tensor<2x64x64xbf16>)
// CHECK:          coll.send %{{.*}} on @mesh ["pp"] shift 1 : tensor<1x64x64xbf16>
// CHECK:          %[[G0:.*]] = coll.recv on @mesh ["pp"] shift 1 : tensor<1x64x64xbf16>
// CHECK-NEXT:     sim.repeat 2 iter(%[[G0]] : tensor<1x64x64xbf16>) {{.*}} {reverse}
// CHECK:          sim.generic "embedding_backward"
// CHECK-NOT:      "head"
// CHECK:        sim.stage [1, 2] {
// CHECK-NOT:      sim.embedding
// CHECK:          %[[A1:.*]] = coll.recv on @mesh ["pp"] shift -1 : tensor<1x64x64xbf16>
// CHECK-NEXT:     sim.repeat 2 iter(%[[A1]] : tensor<1x64x64xbf16>)
// CHECK:          coll.send %{{.*}} on @mesh ["pp"] shift 1
// CHECK:          coll.recv on @mesh ["pp"] shift 1
// CHECK:          coll.send %{{.*}} on @mesh ["pp"] shift -1
// CHECK:          sim.optimizer_step "adamw"(%{{.*}} : tensor<2x64x64xbf16>) grads(%{{.*}} : tensor<2x64x64xbf16>)
// CHECK:        sim.stage [3] {
// CHECK:          sim.param "head" : tensor<1000x64xbf16>
// CHECK:          sim.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<1000x64xbf16>)
// CHECK-NOT:      sim.generic "embedding_backward"
// CHECK:          sim.optimizer_step "adamw"(%{{.*}}, %{{.*}} : tensor<2x64x64xbf16>, tensor<1000x64xbf16>)

// UNEVEN: layers = [3, 5]>
// UNEVEN: sim.stage [0] {
// UNEVEN:   sim.param "layers.w" : tensor<3x64x64xbf16>
// UNEVEN: sim.stage [1] {
// UNEVEN:   sim.param "layers.w" : tensor<5x64x64xbf16>

// Virtual stages 0..3 over 2 physical stages: chunk c of stage s is c * 2 + s.
// VPP: schedule = "interleaved"
// VPP: sim.stage [0] {
// VPP: sim.stage [1, 2] {
// VPP: sim.stage [3] {

// TOO-DEEP: charon-opt: error: pipeline: options 'pp' x 'vpp' (16 x 1 = 16 stages) exceed the model's 8 layers
// FEW-MB: charon-opt: error: pipeline: schedule '1f1b' needs at least as many micro-batches as stages: 'microbatches' is 3, 'pp' is 4
