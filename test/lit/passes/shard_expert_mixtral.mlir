// RUN: charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-expert{ep=8}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-expert{ep=4 etp=2}' | filecheck %s --check-prefix=ETP
// RUN: charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-expert{ep=8},shard-tensor{tp=2}' | filecheck %s --check-prefix=EPTP
// RUN: charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-expert{ep=4 etp=2},shard-tensor{tp=2}' | filecheck %s --check-prefix=ETPTP
// RUN: not charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-expert{ep=3}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: charon-opt %S/Inputs/models/mixtral-8x7b.mlir -p 'shard-tensor{tp=2 experts=false},sequence-parallel,shard-expert{ep=4 etp=1}' | filecheck %s --check-prefix=FOLD

// Mixtral-8x7B (32 layers, 8 experts, top-2; seq 64 so 16 rows per expert): ep=8
// leaves one expert a rank, which sees 8 ranks' 16 rows.

// CHECK:       coll.grid @mesh(axes = ["ep"], shape = 8)
// CHECK:       sim.param "model.layers[0:32].mlp.gate.weight" {role = #sim.role<router>, stacked} : tensor<32x8x4096xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x1x28672x4096xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:32].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<32x1x4096x14336xbf16>
// CHECK-LABEL: sim.phase "forward"
// CHECK:       sim.repeat 32
// CHECK:       %[[D:.*]] = sim.moe_dispatch {{.*}} : (tensor<64x4096xbf16>, tensor<64x2xi64>) -> tensor<8x16x4096xbf16>
// CHECK-NEXT:  %[[E:.*]] = coll.all_to_all %[[D]] on @mesh ["ep"] split 0 concat 1 : tensor<8x16x4096xbf16> -> tensor<1x128x4096xbf16>
// CHECK-NEXT:  sim.matmul %[[E]], {{.*}} : (tensor<1x128x4096xbf16>, tensor<1x28672x4096xbf16>) -> tensor<1x128x28672xbf16>
// CHECK:       %[[B:.*]] = coll.all_to_all {{.*}} split 1 concat 0 : tensor<1x128x4096xbf16> -> tensor<8x16x4096xbf16>
// CHECK:       sim.moe_combine %[[B]]
// CHECK-LABEL: sim.phase "backward"
// CHECK:       coll.all_to_all {{.*}} split 0 concat 1 : tensor<8x16x4096xbf16> -> tensor<1x128x4096xbf16>
// CHECK:       coll.all_to_all {{.*}} split 1 concat 0 : tensor<1x128x4096xbf16> -> tensor<8x16x4096xbf16>

// ETP:       coll.grid @mesh(axes = ["ep", "tp"], shape = 4x2)
// ETP:       sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x2x14336x4096xbf16>
// ETP-NEXT:  sim.param "model.layers[0:32].mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>, stacked} : tensor<32x2x4096x7168xbf16>
// ETP:       coll.all_reduce {{.*}} on @mesh ["tp"] : tensor<2x64x4096xbf16>
// ETP-NEXT:  coll.all_to_all {{.*}} on @mesh ["ep"] split 1 concat 0 : tensor<2x64x4096xbf16> -> tensor<8x16x4096xbf16>

// Expert parallelism first: tensor parallelism then leaves the experts whole (etp=1).
// EPTP:       coll.grid @mesh(axes = ["ep", "tp"], shape = 8x2)
// EPTP:       sim.param "model.layers[0:32].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<32x2048x4096xbf16>
// EPTP:       sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x1x28672x4096xbf16>

// ERR: charon-opt: error: shard-expert: option 'ep' (3) does not divide the experts (8)

// shard-expert{etp} adds the tp axis first: shard-tensor then splits the rest of
// the model over it (the experts stay as etp left them), as the other order does.
// ETPTP:       coll.grid @mesh(axes = ["ep", "tp"], shape = 4x2)
// ETPTP:       sim.param "model.layers[0:32].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<32x2048x4096xbf16>
// ETPTP:       sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x2x14336x4096xbf16>

// etp 1 under tp 2 (Megatron-Core's MoE parallel folding): the ep group of 4 is 2 ep
// positions x the 2 tp ranks, each rank sends the rows of its half of the 64 tokens,
// experts stay whole (2 a rank), nothing reduces an expert output over tp.
// FOLD:       coll.grid @mesh(axes = ["ep", "tp"], shape = 2x2)
// FOLD:       sim.param "model.layers[0:32].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<32x2x28672x4096xbf16>
// FOLD-LABEL: sim.phase "forward"
// FOLD:       %[[D:.*]] = sim.moe_dispatch {{.*}} -> tensor<8x16x4096xbf16>
// FOLD-NEXT:  %[[L:.*]] = sim.generic "moe.local_rows"(%[[D]]) {{.*}} : (tensor<8x16x4096xbf16>) -> tensor<8x8x4096xbf16>
// FOLD-NEXT:  %[[E:.*]] = coll.all_to_all %[[L]] on @mesh ["ep", "tp"] split 0 concat 1 : tensor<8x8x4096xbf16> -> tensor<2x32x4096xbf16>
// FOLD-NEXT:  sim.matmul %[[E]], {{.*}} : (tensor<2x32x4096xbf16>, tensor<2x28672x4096xbf16>) -> tensor<2x32x28672xbf16>
// FOLD-NOT:   coll.all_reduce {{.*}} tensor<2x32x4096xbf16>
// FOLD:       %[[B:.*]] = coll.all_to_all {{.*}} on @mesh ["ep", "tp"] split 1 concat 0 : tensor<2x32x4096xbf16> -> tensor<8x8x4096xbf16>
// FOLD-NEXT:  %[[R:.*]] = sim.generic "moe.local_rows"(%[[B]]) {{.*}} : (tensor<8x8x4096xbf16>) -> tensor<8x16x4096xbf16>
// FOLD:       sim.moe_combine %[[R]]
