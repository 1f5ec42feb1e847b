// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=8}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=16}' | filecheck %s --check-prefix=TP16
// RUN: not charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=3}' 2>&1 | filecheck %s --check-prefix=ERR

// Llama-3.1-70B as imported (80 layers in one sim.repeat, seq 32): Megatron TP=8 gives
// the per-rank shapes of examples/transformer_layer.mlir, with the weights stacked
// [80, ...] and split on their non-leading dims; vocabulary-parallel embedding,
// LM head and cross-entropy.

// CHECK:       coll.grid @mesh(axes = ["tp"], shape = 8)
// CHECK:       sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<16032x8192xbf16>
// CHECK:       sim.param "lm_head.weight" {role = #sim.role<head>} : tensor<16032x8192xbf16>
// CHECK:       sim.param "model.layers[0:80].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<80x1024x8192xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<80x128x8192xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<80x128x8192xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>, stacked} : tensor<80x8192x1024xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<80x3584x8192xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>, stacked} : tensor<80x3584x8192xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>, stacked} : tensor<80x8192x3584xbf16>
// CHECK-NEXT:  sim.param "model.layers[0:80].input_layernorm.weight" {role = #sim.role<norm>, stacked} : tensor<80x8192xbf16>
// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[EMB:.*]] = sim.embedding {{.*}} : (tensor<16032x8192xbf16>, tensor<1x32xi64>) -> tensor<1x32x8192xbf16>
// CHECK-NEXT:  %[[EMBR:.*]] = coll.all_reduce %[[EMB]] on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.repeat 80 iter(%[[EMBR]] : tensor<1x32x8192xbf16>) slices({{.*}} : tensor<80x1024x8192xbf16>, tensor<80x128x8192xbf16>
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: tensor<1x32x8192xbf16>, %{{.*}}: tensor<1024x8192xbf16>, %{{.*}}: tensor<128x8192xbf16>
// CHECK:       sim.matmul {{.*}} {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<1024x8192xbf16>) -> tensor<1x32x1024xbf16>
// CHECK:       sim.attention {{.*}} : (tensor<1x32x8x128xbf16>, tensor<1x32x1x128xbf16>, tensor<1x32x1x128xbf16>) -> tensor<1x32x8x128xbf16>
// CHECK:       sim.matmul {{.*}} {transpose_rhs} : (tensor<1x32x1024xbf16>, tensor<8192x1024xbf16>) -> tensor<1x32x8192xbf16>
// CHECK-NEXT:  coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.matmul {{.*}} {transpose_rhs} : (tensor<1x32x3584xbf16>, tensor<8192x3584xbf16>) -> tensor<1x32x8192xbf16>
// CHECK-NEXT:  coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.yield
// The LM head is column-parallel on the vocabulary; the cross-entropy all-reduces
// three fp32 numbers per token (max, sum of exponentials, target logit).
// CHECK:       sim.matmul {{.*}} {transpose_rhs} : (tensor<1x32x8192xbf16>, tensor<16032x8192xbf16>) -> tensor<1x32x16032xbf16>
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<32x1xf32>
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<32x1xf32>
// CHECK:       "aten._log_softmax"({{.*}}) {{.*}} : (tensor<32x16032xf32>) -> tensor<32x16032xf32>
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<32x1xf32>
// CHECK:       "aten.nll_loss_forward"
// CHECK-LABEL: sim.phase "backward"
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.repeat 80 iter
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.attention_grad {{.*}} -> (tensor<1x32x8x128xbf16>, tensor<1x32x1x128xbf16>, tensor<1x32x1x128xbf16>)
// CHECK:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x32x8192xbf16>
// CHECK:       sim.yield
// CHECK:       "aten.embedding_dense_backward"({{.*}}) {{.*}} -> tensor<16032x8192xbf16>
// CHECK-LABEL: sim.phase "optimizer"

// TP16 exceeds the 8 kv heads: 4 query heads and 1 kv head per rank.
// TP16:       sim.param "model.layers[0:80].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<80x512x8192xbf16>
// TP16-NEXT:  sim.param "model.layers[0:80].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<80x128x8192xbf16>
// TP16:       sim.attention {{.*}} : (tensor<1x32x4x128xbf16>, tensor<1x32x1x128xbf16>, tensor<1x32x1x128xbf16>) -> tensor<1x32x4x128xbf16>

// ERR: charon-opt: error: shard-tensor: option 'tp' (3) does not divide the attention heads (64)
