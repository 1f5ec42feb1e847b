// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-expert{ep=32}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-expert{ep=8 capacity-factor=1.25}' | filecheck %s --check-prefix=CAP
// RUN: not charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-expert{ep=3}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-expert{ep=32 dispatcher=flex groups=8 groups-per-token=4}' | filecheck %s --check-prefix=FLEX
// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-tensor{tp=2},shard-expert{ep=4}' | filecheck %s --check-prefix=TP
// RUN: not charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'shard-expert{ep=32 dispatcher=flex groups=8 groups-per-token=0}' 2>&1 | filecheck %s --check-prefix=GROUPS

// DeepSeek-V3 (3 dense layers, then 58 MoE layers of 256 routed experts, top-8, and
// one shared expert; seq 384, so 12 rows per routed expert): ep=32 leaves 8 routed
// experts a rank; the shared expert and the dense layers stay whole.

// CHECK:       coll.grid @mesh(axes = ["ep"], shape = 32)
// CHECK:       sim.param "model.layers[3:61].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<58x8x4096x7168xbf16>
// CHECK-NEXT:  sim.param "model.layers[3:61].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<58x8x7168x2048xbf16>
// CHECK:       sim.param "model.layers[3:61].mlp.shared_experts.gate_proj.weight" {role = #sim.role<shared_expert>, split = #sim.split<column>, stacked} : tensor<58x2048x7168xbf16>
// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[D:.*]] = sim.moe_dispatch {{.*}} : (tensor<384x7168xbf16>, tensor<384x8xi64>) -> tensor<256x12x7168xbf16>
// CHECK-NEXT:  coll.all_to_all %[[D]] on @mesh ["ep"] split 0 concat 1 : tensor<256x12x7168xbf16> -> tensor<8x384x7168xbf16>
// CHECK:       coll.all_to_all {{.*}} on @mesh ["ep"] split 1 concat 0 : tensor<8x384x7168xbf16> -> tensor<256x12x7168xbf16>
// CHECK:       sim.moe_combine
// CHECK-LABEL: sim.phase "backward"
// CHECK:       coll.all_to_all {{.*}} split 0 concat 1 : tensor<256x12x7168xbf16> -> tensor<8x384x7168xbf16>
// CHECK:       coll.all_to_all {{.*}} split 1 concat 0 : tensor<8x384x7168xbf16> -> tensor<256x12x7168xbf16>

// CAP: sim.moe_dispatch {{.*}} -> tensor<256x15x7168xbf16>
// CAP-NEXT: coll.all_to_all {{.*}} : tensor<256x15x7168xbf16> -> tensor<32x120x7168xbf16>

// ERR: charon-opt: error: shard-expert: option 'ep' (3) does not divide the experts (256)

// dispatcher=flex (DeepEP / HybridEP): the a2a ops say a token is there top_k
// times and within 4 of 8 groups of experts, so the engine prices one copy per
// destination node and rank; the forward's dispatch and combine and the backward's.
// FLEX:      coll.all_to_all {{.*}} split 0 concat 1 {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64} : tensor<256x12x7168xbf16> -> tensor<8x384x7168xbf16>
// FLEX:      coll.all_to_all {{.*}} split 1 concat 0 {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64} : tensor<8x384x7168xbf16> -> tensor<256x12x7168xbf16>
// FLEX-LABEL: sim.phase "backward"
// FLEX:      coll.all_to_all {{.*}} {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64}
// FLEX:      coll.all_to_all {{.*}} {top_k = 8 : i64, groups = 8 : i64, groups_per_token = 4 : i64}

// With tensor parallelism the tp ranks hold the same tokens at the dispatch; each
// sends its 1/tp (Megatron-Core's sequence-parallel MoE input).
// TP: coll.all_to_all {{.*}} on @mesh ["ep"] split 0 concat 1 {token_replicas = 2 : i64}
// TP: coll.all_to_all {{.*}} on @mesh ["ep"] split 1 concat 0 {token_replicas = 2 : i64}

// GROUPS: charon-opt: error: shard-expert: options 'groups' (8) and 'groups-per-token' (0) must divide the 256 experts into groups of which groups-per-token hold the top-8
