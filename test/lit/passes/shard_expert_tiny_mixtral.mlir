// RUN: charon-opt %S/Inputs/models/tiny-mixtral.mlir -p 'shard-expert{ep=2}' | filecheck %s

// issue #30: a 2-layer, 4-expert, top-2 Mixtral (hidden 64, expert ffn 64) at 256 tokens:
// 128 rows per expert, and gate_up_proj is [4, 128, 64], the shape of a dispatched
// buffer. Its weight gradient is no expert activation: it keeps the weight's shape
// (shard-expert once gave it 256 rows and the view after it failed verification).

// CHECK:       sim.replicated_flops = #sim.replicated_flops<"shard-expert" = 0.0>
// CHECK:       sim.param "model.layers[0:2].mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>, stacked} : tensor<2x2x128x64xbf16>
// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[D:.*]] = sim.moe_dispatch {{.*}} -> tensor<4x128x64xbf16>
// CHECK-NEXT:  coll.all_to_all %[[D]] on @mesh ["ep"] split 0 concat 1 : tensor<4x128x64xbf16> -> tensor<2x256x64xbf16>
// CHECK-LABEL: sim.phase "backward"
// CHECK:       %[[G:.*]] = sim.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<2x256x64xbf16>, tensor<2x256x128xbf16>) -> tensor<2x64x128xbf16>
// CHECK:       sim.view %[[G]] {dims = [[0 : i64], [2 : i64], [1 : i64]]} : tensor<2x64x128xbf16> -> tensor<2x128x64xbf16>
