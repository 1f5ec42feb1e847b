// RUN: charon-opt %S/Inputs/eight_layers_tied.mlir -p 'pipeline{pp=4 microbatches=8}' | filecheck %s
// RUN: charon-opt %S/Inputs/eight_layers_tied.mlir -p 'pipeline{pp=2 vpp=2 schedule=interleaved microbatches=4}' | filecheck %s --check-prefix=VPP
// RUN: charon-opt %S/Inputs/eight_layers_tied.mlir -p 'pipeline{pp=1}' | filecheck %s --check-prefix=ONE
// RUN: not charon-opt %S/Inputs/eight_layers_tied.mlir -p 'pipeline{pp=1 vpp=2 schedule=interleaved microbatches=2}' 2>&1 | filecheck %s --check-prefix=ONE-VPP
// RUN: charon-opt %S/Inputs/models/tiny-gpt.mlir -p 'pipeline{pp=2}' | filecheck %s --check-prefix=GPT

// A weight the embedding and the head share: the first and the last stage each
// hold it, keep their own partial of its gradient (the embedding's, the head's),
// sum the two over the embedding group (positions 0 and pp-1 of the pp axis)
// before the step, and update their copy. The middle stages hold none of it.
// CHECK:      sim.stage [0] {
// CHECK:        %[[T0:.*]] = sim.param "embed" : tensor<1000x64xbf16>
// CHECK:        sim.embedding %[[T0]], %{{.*}}
// CHECK-NOT:    {transpose_rhs} : (tensor<1x64x64xbf16>, tensor<1000x64xbf16>)
// CHECK:        %[[B0:[^,]*]], %{{.*}} = sim.phase "backward"
// CHECK:        %[[DT:.*]] = sim.generic "embedding_backward"
// CHECK-NEXT:   sim.yield %[[DT]], %{{.*}} : tensor<1000x64xbf16>, tensor<2x64x64xbf16>
// CHECK:        sim.phase "optimizer" {
// CHECK-NEXT:     %[[SUM0:.*]] = coll.all_reduce %[[B0]] on @mesh ["pp"] {subgroup = array<i64: 0, 3>} : tensor<1000x64xbf16>
// CHECK-NEXT:     sim.optimizer_step "adamw"(%[[T0]], %{{.*}} : tensor<1000x64xbf16>, tensor<2x64x64xbf16>) grads(%[[SUM0]], %{{.*}} :
// CHECK:      sim.stage [1, 2] {
// CHECK-NOT:    sim.param "embed"
// CHECK-NOT:    coll.all_reduce
// CHECK:        sim.optimizer_step "adamw"(%{{.*}} : tensor<2x64x64xbf16>) grads
// CHECK:      sim.stage [3] {
// CHECK:        %[[T3:.*]] = sim.param "embed" : tensor<1000x64xbf16>
// CHECK-NOT:    sim.embedding
// CHECK:        sim.matmul %{{.*}}, %[[T3]] {transpose_rhs}
// CHECK:        %[[B3:[^,]*]], %{{.*}} = sim.phase "backward"
// CHECK:        %[[DHEAD:.*]] = sim.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<1x64x1000xbf16>, tensor<1x64x64xbf16>) -> tensor<1x1000x64xbf16>
// CHECK-NEXT:   %[[DHEADR:.*]] = sim.view %[[DHEAD]] : tensor<1x1000x64xbf16> -> tensor<1000x64xbf16>
// CHECK-NOT:    "embedding_backward"
// CHECK:        sim.yield %[[DHEADR]], %{{.*}} : tensor<1000x64xbf16>, tensor<2x64x64xbf16>
// CHECK:        sim.phase "optimizer" {
// CHECK-NEXT:     %[[SUM3:.*]] = coll.all_reduce %[[B3]] on @mesh ["pp"] {subgroup = array<i64: 0, 3>} : tensor<1000x64xbf16>
// CHECK-NEXT:     sim.optimizer_step "adamw"(%[[T3]], %{{.*}} : tensor<1000x64xbf16>, tensor<2x64x64xbf16>) grads(%[[SUM3]], %{{.*}} :

// Interleaved: the first chunk of stage 0 and the last chunk of stage pp-1 (virtual
// stages 0 and 3 of 2 x 2) share the weight; the middle chunks do not.
// VPP:      sim.stage [0] {
// VPP:        coll.all_reduce %{{.*}} on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<1000x64xbf16>
// VPP:      sim.stage [1, 2] {
// VPP-NOT:    coll.all_reduce
// VPP:      sim.stage [3] {
// VPP:        coll.all_reduce %{{.*}} on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<1000x64xbf16>

// One stage sums the two partials itself, as before.
// ONE:       sim.stage [0] {
// ONE-NOT:   coll.all_reduce
// ONE:       %[[SUM:.*]] = sim.elementwise "add" %{{.*}}, %{{.*}} : tensor<1000x64xbf16>, tensor<1000x64xbf16> -> tensor<1000x64xbf16>
// ONE-NEXT:  sim.yield %[[SUM]], %{{.*}} : tensor<1000x64xbf16>, tensor<8x64x64xbf16>
// ONE-NOT:   coll.all_reduce

// Two chunks on one stage are refused: the stage would hold the weight twice
// (and send to itself).
// ONE-VPP: charon-opt: error: pipeline: option 'vpp' (2) needs 'pp' >= 2 (an interleaved schedule of one stage)

// The imported GPT-2 (wte tied to the LM head, learned positions wpe on the first
// stage only).
// GPT:      sim.stage [0] {
// GPT-NEXT:   %[[W0:.*]] = sim.param "transformer.wte.weight" {role = #sim.role<embedding>} : tensor<256x64xbf16>
// GPT-NEXT:   %[[P0:.*]] = sim.param "transformer.wpe.weight" : tensor<64x64xbf16>
// GPT:        sim.embedding %[[W0]], %{{.*}}
// GPT:        %[[B0:[^,]*]], %{{.*}} = sim.phase "backward"
// GPT:        %[[DW0:.*]] = sim.generic "aten.embedding_dense_backward"({{.*}}) -> tensor<256x64xbf16>
// GPT-NEXT:   sim.yield %[[DW0]], %{{.*}} : tensor<256x64xbf16>, tensor<64x64xbf16>,
// GPT:        %[[SUM0:.*]] = coll.all_reduce %[[B0]] on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<256x64xbf16>
// GPT-NEXT:   sim.optimizer_step "adamw"(%[[W0]], %[[P0]], {{.*}} grads(%[[SUM0]], %{{.*}}
// GPT:      sim.stage [1] {
// GPT-NEXT:   %[[W1:.*]] = sim.param "transformer.wte.weight" {role = #sim.role<embedding>} : tensor<256x64xbf16>
// GPT-NOT:    "transformer.wpe.weight"
// GPT:        sim.matmul %{{.*}}, %[[W1]] {transpose_rhs} : (tensor<1x24x64xbf16>, tensor<256x64xbf16>) -> tensor<1x24x256xbf16>
// GPT:        %[[B1:[^,]*]], %{{.*}} = sim.phase "backward"
// GPT:        %[[DW1:.*]] = sim.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<24x256xbf16>, tensor<24x64xbf16>) -> tensor<256x64xbf16>
// GPT-NOT:    "aten.embedding_dense_backward"
// GPT:        sim.yield %[[DW1]], %{{.*}} : tensor<256x64xbf16>,
// GPT:        %[[SUM1:.*]] = coll.all_reduce %[[B1]] on @mesh ["pp"] {subgroup = array<i64: 0, 1>} : tensor<256x64xbf16>
// GPT-NEXT:   sim.optimizer_step "adamw"(%[[W1]], {{.*}} grads(%[[SUM1]], %{{.*}}
