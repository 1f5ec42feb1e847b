// RUN: charon import %S/Inputs/tiny-llama.json --seq-len 16 --no-cache -o - 2>/dev/null | filecheck %s

// A 2-layer Llama (hidden 64, 4 query heads and 2 KV heads of 16, MLP 128)
// traced once per distinct layer: one sim.repeat of 2 in each of forward and
// backward, stacked weights as slices, an AdamW step over every weight.

// CHECK:      sim.param "model.embed_tokens.weight" {role = #sim.role<embedding>} : tensor<256x64xbf16>
// CHECK:      sim.param "model.layers[0:2].self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>, stacked} : tensor<2x64x64xbf16>
// CHECK-NEXT: sim.param "model.layers[0:2].self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>, stacked} : tensor<2x32x64xbf16>

// CHECK-LABEL: sim.phase "forward"
// CHECK:       sim.embedding
// CHECK:       sim.repeat 2 iter(%{{.*}} : tensor<1x16x64xbf16>) slices(
// CHECK-NEXT:  ^bb0(%[[H:.*]]: tensor<1x16x64xbf16>, %[[WQ:[^:]*]]: tensor<64x64xbf16>, %[[WK:[^:]*]]: tensor<32x64xbf16>, %[[WV:[^:]*]]: tensor<32x64xbf16>, %[[WO:[^:]*]]: tensor<64x64xbf16>, %[[WG:[^:]*]]: tensor<128x64xbf16>, %[[WU:[^:]*]]: tensor<128x64xbf16>, %[[WD:[^:]*]]: tensor<64x128xbf16>,
// RMSNorm: upcast, square, mean, add eps, rsqrt, scale, downcast, weight
// CHECK-NEXT:  sim.elementwise "cast" %[[H]] : tensor<1x16x64xbf16> -> tensor<1x16x64xf32>
// CHECK-NEXT:  sim.elementwise "pow"
// CHECK-NEXT:  sim.reduce "mean" %{{.*}} [2] : tensor<1x16x64xf32> -> tensor<1x16x1xf32>
// CHECK-NEXT:  sim.elementwise "add"
// CHECK-NEXT:  sim.elementwise "rsqrt"
// CHECK-NEXT:  sim.elementwise "mul"
// CHECK-NEXT:  sim.elementwise "cast"
// CHECK-NEXT:  %[[N1:.*]] = sim.elementwise "mul"
// CHECK-NEXT:  sim.matmul %[[N1]], %[[WQ]] {transpose_rhs} : (tensor<1x16x64xbf16>, tensor<64x64xbf16>) -> tensor<1x16x64xbf16>
// CHECK-NEXT:  sim.matmul %[[N1]], %[[WK]] {transpose_rhs} : (tensor<1x16x64xbf16>, tensor<32x64xbf16>) -> tensor<1x16x32xbf16>
// CHECK-NEXT:  sim.matmul %[[N1]], %[[WV]] {transpose_rhs} : (tensor<1x16x64xbf16>, tensor<32x64xbf16>) -> tensor<1x16x32xbf16>
// RoPE on q and k, then one opaque causal GQA attention
// CHECK:       %[[ATT:.*]] = sim.attention %{{.*}}, %{{.*}}, %{{.*}} {causal} : (tensor<1x16x4x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>) -> tensor<1x16x4x16xbf16>
// CHECK-NEXT:  %[[AV:.*]] = sim.view %[[ATT]] : tensor<1x16x4x16xbf16> -> tensor<1x16x64xbf16>
// CHECK-NEXT:  %[[O:.*]] = sim.matmul %[[AV]], %[[WO]] {transpose_rhs} : (tensor<1x16x64xbf16>, tensor<64x64xbf16>) -> tensor<1x16x64xbf16>
// CHECK-NEXT:  %[[R1:.*]] = sim.elementwise "add" %[[H]], %[[O]]
// CHECK-NEXT:  sim.elementwise "cast" %[[R1]]
// CHECK-NEXT:  sim.elementwise "pow"
// CHECK-NEXT:  sim.reduce "mean"
// CHECK-NEXT:  sim.elementwise "add"
// CHECK-NEXT:  sim.elementwise "rsqrt"
// CHECK-NEXT:  sim.elementwise "mul"
// CHECK-NEXT:  sim.elementwise "cast"
// CHECK-NEXT:  %[[N2:.*]] = sim.elementwise "mul"
// SwiGLU MLP
// CHECK-NEXT:  %[[G:.*]] = sim.matmul %[[N2]], %[[WG]] {transpose_rhs} : (tensor<1x16x64xbf16>, tensor<128x64xbf16>) -> tensor<1x16x128xbf16>
// CHECK-NEXT:  %[[S:.*]] = sim.elementwise "silu" %[[G]]
// CHECK-NEXT:  %[[U:.*]] = sim.matmul %[[N2]], %[[WU]] {transpose_rhs}
// CHECK-NEXT:  %[[GU:.*]] = sim.elementwise "mul" %[[S]], %[[U]]
// CHECK-NEXT:  %[[D:.*]] = sim.matmul %[[GU]], %[[WD]] {transpose_rhs} : (tensor<1x16x128xbf16>, tensor<64x128xbf16>) -> tensor<1x16x64xbf16>
// CHECK-NEXT:  %[[OUT:.*]] = sim.elementwise "add" %[[R1]], %[[D]]
// CHECK:       sim.yield %[[OUT]], {{.*}}
// CHECK:       sim.generic "aten.nll_loss_forward"

// CHECK-LABEL: sim.phase "backward"
// CHECK:       sim.repeat 2 iter(
// CHECK-SAME:  {reverse}
// CHECK:       sim.attention_grad
// CHECK-NOT:   sim.attention_grad
// CHECK:       sim.generic "aten.embedding_dense_backward"

// CHECK-LABEL: sim.phase "optimizer"
// CHECK-NEXT:  sim.optimizer_step "adamw"
