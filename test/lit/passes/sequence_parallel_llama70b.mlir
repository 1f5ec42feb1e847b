// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=8},sequence-parallel' | filecheck %s

// Llama-3.1-70B, TP=8 with sequence parallelism: the embedding's all_reduce becomes
// a reduce_scatter, the layers carry the hidden state as 4 of the 32 tokens, and
// each layer has two reduce_scatters and two all_gathers in the forward.

// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[EMB:.*]] = sim.embedding {{.*}} -> tensor<1x32x8192xbf16>
// CHECK-NEXT:  %[[EMBS:.*]] = coll.reduce_scatter %[[EMB]] on @mesh ["tp"] axis 1 : tensor<1x32x8192xbf16> -> tensor<1x4x8192xbf16>
// CHECK:       sim.repeat 80 iter(%[[EMBS]] : tensor<1x4x8192xbf16>)
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: tensor<1x4x8192xbf16>,
// CHECK:       sim.reduce "mean" {{.*}} : tensor<1x4x8192xf32> -> tensor<1x4x1xf32>
// CHECK:       coll.all_gather {{.*}} axis 1 {sim.sequence_parallel} : tensor<1x4x8192xbf16> -> tensor<1x32x8192xbf16>
// CHECK:       sim.attention {{.*}} -> tensor<1x32x8x128xbf16>
// CHECK:       coll.reduce_scatter {{.*}} axis 1 : tensor<1x32x8192xbf16> -> tensor<1x4x8192xbf16>
// CHECK:       coll.all_gather {{.*}} axis 1 {sim.sequence_parallel} : tensor<1x4x8192xbf16> -> tensor<1x32x8192xbf16>
// CHECK:       coll.reduce_scatter {{.*}} axis 1 : tensor<1x32x8192xbf16> -> tensor<1x4x8192xbf16>
// CHECK-NOT:   coll.all_gather
// CHECK:       sim.yield
// CHECK-NOT:   coll.all_reduce {{.*}} tensor<1x32x8192xbf16>
// CHECK-LABEL: sim.phase "backward"
// CHECK:       sim.repeat 80 iter(%{{.*}} : tensor<1x4x8192xbf16>)
// CHECK-NOT:   coll.all_reduce {{.*}} tensor<1x32x8192xbf16>
// CHECK-LABEL: sim.phase "optimizer"
