// RUN: charon-opt %s -p 'shard-expert{ep=4}' | filecheck %s
// RUN: charon-opt %s -p 'shard-expert{ep=2 etp=2}' | filecheck %s --check-prefix=ETP
// RUN: charon-opt %s -p 'shard-expert{ep=4 capacity-factor=1.5}' | filecheck %s --check-prefix=CAP
// RUN: charon-opt %s -p 'shard-expert{ep=4 routing=random}' | filecheck %s --check-prefix=RANDOM
// RUN: not charon-opt %s -p 'shard-expert{ep=4 routing=skewed}' 2>&1 | filecheck %s --check-prefix=ROUTING
// RUN: not charon-opt %s -p 'shard-expert{ep=3}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not charon-opt %s -p 'shard-expert{ep=2},shard-expert{ep=2}' 2>&1 | filecheck %s --check-prefix=TWICE

// The routed experts of a tiny MoE layer (32 tokens, hidden 64, 8 experts, top-2,
// expert ffn 32; 8 rows per expert). ep=4: 2 experts a rank, each seeing the rows
// of all 4 ranks' tokens (32); all_to_all after every dispatch and before every
// combine, forward and backward.

// CHECK:       builtin.module attributes {sim.expert_tp = 1 : i64, sim.replicated_flops = #sim.replicated_flops<"shard-expert" = {{.*}}>}
// CHECK-NEXT:  coll.grid @mesh(axes = ["ep"], shape = 4)
// CHECK:       sim.param "mlp.gate.weight" {role = #sim.role<router>} : tensor<8x64xbf16>
// CHECK-NEXT:  sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<2x64x64xbf16>
// CHECK-NEXT:  sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<2x64x32xbf16>
// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[XD:.*]] = sim.moe_dispatch %x, %i : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x8x64xbf16>
// CHECK-NEXT:  %[[XE:.*]] = coll.all_to_all %[[XD]] on @mesh ["ep"] split 0 concat 1 : tensor<8x8x64xbf16> -> tensor<2x32x64xbf16>
// CHECK-NEXT:  sim.matmul %[[XE]], %wgu {transpose_rhs} : (tensor<2x32x64xbf16>, tensor<2x64x64xbf16>) -> tensor<2x32x64xbf16>
// CHECK:       %[[Y:.*]] = sim.matmul %m, %wd {transpose_rhs} : (tensor<2x32x32xbf16>, tensor<2x64x32xbf16>) -> tensor<2x32x64xbf16>
// CHECK-NEXT:  %[[YT:.*]] = coll.all_to_all %[[Y]] on @mesh ["ep"] split 1 concat 0 : tensor<2x32x64xbf16> -> tensor<8x8x64xbf16>
// CHECK-NEXT:  sim.moe_combine %[[YT]], %i weights %w : tensor<32x2xbf16> : (tensor<8x8x64xbf16>, tensor<32x2xi64>) -> tensor<32x64xbf16>
// CHECK-LABEL: sim.phase "backward"
// CHECK:       %[[DYE:.*]] = sim.moe_dispatch %dy
// CHECK-NEXT:  coll.all_to_all %[[DYE]] on @mesh ["ep"] split 0 concat 1 : tensor<8x8x64xbf16> -> tensor<2x32x64xbf16>
// CHECK:       %[[DX:.*]] = coll.all_to_all %dxd on @mesh ["ep"] split 1 concat 0 : tensor<2x32x64xbf16> -> tensor<8x8x64xbf16>
// CHECK-NEXT:  sim.moe_combine %[[DX]]
// CHECK-LABEL: sim.phase "optimizer"
// CHECK-NEXT:  sim.optimizer_step "adamw"(%wgu, %wd : tensor<2x64x64xbf16>, tensor<2x64x32xbf16>)

// ETP:       coll.grid @mesh(axes = ["ep", "tp"], shape = 2x2)
// ETP:       sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<4x32x64xbf16>
// ETP-NEXT:  sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<4x64x16xbf16>
// ETP:       %[[Y:.*]] = sim.matmul %m, %wd {transpose_rhs} : (tensor<4x16x16xbf16>, tensor<4x64x16xbf16>) -> tensor<4x16x64xbf16>
// ETP-NEXT:  %[[YR:.*]] = coll.all_reduce %[[Y]] on @mesh ["tp"] : tensor<4x16x64xbf16>
// ETP-NEXT:  coll.all_to_all %[[YR]] on @mesh ["ep"] split 1 concat 0 : tensor<4x16x64xbf16> -> tensor<8x8x64xbf16>

// capacity 1.5 * 32 * 2 / 8 = 12 rows per expert, padding reported as replicated work
// CAP:       builtin.module attributes {sim.expert_tp = 1 : i64, sim.replicated_flops = #sim.replicated_flops<"shard-expert" = {{[0-9]}}
// CAP:       sim.moe_dispatch %x, %i : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x12x64xbf16>
// CAP-NEXT:  coll.all_to_all {{.*}} : tensor<8x12x64xbf16> -> tensor<2x48x64xbf16>

// routing=random (forced load balancing): the slowest of 4 ranks gets the 128 tokens'
// top-2 picks' expected maximum, 1.119 x the mean: round(8 x 1.119) = 9 rows per expert
// RANDOM:       builtin.module attributes {sim.expert_tp = 1 : i64, sim.replicated_flops = #sim.replicated_flops<"shard-expert" = {{[0-9]}}
// RANDOM:       %[[XD:.*]] = sim.moe_dispatch %x, %i : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x9x64xbf16>
// RANDOM-NEXT:  coll.all_to_all %[[XD]] on @mesh ["ep"] split 0 concat 1 : tensor<8x9x64xbf16> -> tensor<2x36x64xbf16>
// ROUTING: charon-opt: error: invalid pass pipeline 'shard-expert{ep=4 routing=skewed}': Incompatible types: given ('skewed',), expected typing.Literal['balanced', 'random']

// ERR: charon-opt: error: shard-expert: option 'ep' (3) does not divide the experts (8)
// TWICE: charon-opt: error: shard-expert: the module is already sharded along grid axis 'ep'

builtin.module {
  %x = sim.input "hidden" : tensor<32x64xbf16>
  %wr = sim.param "mlp.gate.weight" {role = #sim.role<router>} : tensor<8x64xbf16>
  %wgu = sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<8x64x64xbf16>
  %wd = sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<8x64x32xbf16>
  %f:9 = sim.phase "forward" -> tensor<32x2xbf16>, tensor<32x2xi64>, tensor<8x8x64xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x64xbf16>, tensor<32x64xbf16> {
    %s = sim.matmul %x, %wr {transpose_rhs} : (tensor<32x64xbf16>, tensor<8x64xbf16>) -> tensor<32x8xbf16>
    %p = sim.softmax %s dim 1 : tensor<32x8xbf16>
    %w, %i = sim.topk %p k = 2 : tensor<32x8xbf16> -> (tensor<32x2xbf16>, tensor<32x2xi64>)
    %xd = sim.moe_dispatch %x, %i : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x8x64xbf16>
    %gu = sim.matmul %xd, %wgu {transpose_rhs} : (tensor<8x8x64xbf16>, tensor<8x64x64xbf16>) -> tensor<8x8x64xbf16>
    %g = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>) -> tensor<8x8x32xbf16>
    %u = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>) -> tensor<8x8x32xbf16>
    %a = sim.elementwise "silu" %g : tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %m = sim.elementwise "mul" %a, %u : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %y = sim.matmul %m, %wd {transpose_rhs} : (tensor<8x8x32xbf16>, tensor<8x64x32xbf16>) -> tensor<8x8x64xbf16>
    %out = sim.moe_combine %y, %i weights %w : tensor<32x2xbf16> : (tensor<8x8x64xbf16>, tensor<32x2xi64>) -> tensor<32x64xbf16>
    sim.yield %w, %i, %xd, %g, %u, %a, %m, %y, %out : tensor<32x2xbf16>, tensor<32x2xi64>, tensor<8x8x64xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x32xbf16>, tensor<8x8x64xbf16>, tensor<32x64xbf16>
  }
  %b:3 = sim.phase "backward" -> tensor<8x64x64xbf16>, tensor<8x64x32xbf16>, tensor<32x64xbf16> {
    %dy = sim.elementwise "fill" %f#8 : tensor<32x64xbf16> -> tensor<32x64xbf16>
    %dye = sim.moe_dispatch %dy, %f#1 : (tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<8x8x64xbf16>
    %dw = sim.generic "moe_combine_weight_grad"(%f#7, %dy, %f#1) {flop_count = 8192.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x64xbf16>, tensor<32x64xbf16>, tensor<32x2xi64>) -> tensor<32x2xbf16>
    %dwd = sim.matmul %dye, %f#6 {transpose_lhs} : (tensor<8x8x64xbf16>, tensor<8x8x32xbf16>) -> tensor<8x64x32xbf16>
    %dm = sim.matmul %dye, %wd : (tensor<8x8x64xbf16>, tensor<8x64x32xbf16>) -> tensor<8x8x32xbf16>
    %da = sim.elementwise "mul" %dm, %f#4 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %du = sim.elementwise "mul" %dm, %f#5 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %dg = sim.elementwise "silu_grad" %da, %f#3 : tensor<8x8x32xbf16>, tensor<8x8x32xbf16> -> tensor<8x8x32xbf16>
    %dgu = sim.generic "aten.cat"(%dg, %du) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<8x8x32xbf16>, tensor<8x8x32xbf16>) -> tensor<8x8x64xbf16>
    %dwgu = sim.matmul %dgu, %f#2 {transpose_lhs} : (tensor<8x8x64xbf16>, tensor<8x8x64xbf16>) -> tensor<8x64x64xbf16>
    %dxd = sim.matmul %dgu, %wgu : (tensor<8x8x64xbf16>, tensor<8x64x64xbf16>) -> tensor<8x8x64xbf16>
    %dx = sim.moe_combine %dxd, %f#1 : (tensor<8x8x64xbf16>, tensor<32x2xi64>) -> tensor<32x64xbf16>
    sim.yield %dwgu, %dwd, %dx : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>, tensor<32x64xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wgu, %wd : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>) grads (%b#0, %b#1 : tensor<8x64x64xbf16>, tensor<8x64x32xbf16>)
    sim.yield
  }
}

