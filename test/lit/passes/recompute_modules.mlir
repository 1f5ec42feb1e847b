// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'fuse,recompute{policy=selective modules=mla_up_proj}' | filecheck %s --check-prefix=MLA
// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'fuse,recompute{policy=selective modules=moe}' | filecheck %s --check-prefix=MOE
// RUN: charon-opt %S/Inputs/models/deepseek-v3.mlir -p 'fuse,recompute{policy=selective modules=shared_experts}' | filecheck %s --check-prefix=SHARED
// RUN: charon-opt %S/Inputs/models/tiny-gpt-oss.mlir -p 'fuse,recompute{policy=selective modules=layernorm,moe_act}' | filecheck %s --check-prefix=OSS

// Megatron-Core's --recompute-modules on imported MoE models, found from the
// data flow (no parameter names). DeepSeek-V3 (seq 384): 3 dense layers, then
// 58 MoE layers, Multi-Latent Attention in both.

// mla_up_proj: the forward no longer saves the expanded q and k (stacked
// [58, 1, 384, 128, 192]); before each attention gradient the backward re-runs
// the latent norm and the up projection from the saved latents, and the
// gradient reads the re-made q.
// MLA:       sim.phase "forward"
// MLA-NOT:   tensor<58x1x384x128x192xbf16>
// MLA-SAME:  {
// MLA:       sim.phase "backward"
// MLA:       sim.repeat 58
// MLA:       %{{.*}}, %[[QN:.*]] = sim.generic "fused.rms_norm"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// MLA-NEXT:  sim.matmul %[[QN]], %{{.*}} {sim.recompute = #sim<recompute "selective">, transpose_rhs} : (tensor<1x384x1536xbf16>, tensor<24576x1536xbf16>)
// MLA:       %[[Q:.*]] = sim.view %{{.*}} {sim.recompute = #sim<recompute "selective">} : tensor<1x128x384x192xbf16> -> tensor<1x384x128x192xbf16>
// MLA:       sim.matmul %{{.*}} {sim.recompute = #sim<recompute "selective">, transpose_rhs} : (tensor<1x384x512xbf16>, tensor<32768x512xbf16>)
// MLA:       sim.attention_grad %[[Q]], %{{.*}} {causal, flash}

// moe: the MoE block whole (router, dispatch, experts, combine, shared expert)
// re-runs before its backward; the dense layers' MLPs are left alone.
// MOE:       sim.phase "backward"
// MOE:       sim.repeat 58
// MOE:       sim.moe_dispatch %{{.*}} {sim.recompute = #sim<recompute "selective">}
// MOE:       sim.moe_combine %{{.*}} {sim.recompute = #sim<recompute "selective">}
// MOE:       sim.repeat 3
// MOE-NOT:   sim.recompute
// MOE:       sim.phase "optimizer"

// shared_experts: only the shared expert's three GEMMs (7168 -> 2048 -> 7168).
// SHARED:    sim.phase "backward"
// SHARED:    sim.repeat 58
// SHARED:    sim.matmul %{{.*}} {sim.recompute = #sim<recompute "selective">, transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<2048x7168xbf16>)
// SHARED:    sim.matmul %{{.*}} {sim.recompute = #sim<recompute "selective">, transpose_rhs} : (tensor<1x384x7168xbf16>, tensor<2048x7168xbf16>)
// SHARED:    sim.matmul %{{.*}} {sim.recompute = #sim<recompute "selective">, transpose_rhs} : (tensor<1x384x2048xbf16>, tensor<7168x2048xbf16>)
// SHARED-NOT: sim.moe_dispatch {{.*}}sim.recompute
// SHARED:    sim.repeat 3
// SHARED-NOT: sim.recompute
// SHARED:    sim.phase "optimizer"

// GPT-OSS (a two-layer period: sliding-window, then full attention): the four
// residual norms and both experts' activations are re-run, each before the
// backward op that first reads its output; the activation reads the saved
// output of the experts' first GEMM.
// OSS:       sim.phase "backward"
// OSS:       sim.repeat
// OSS:       sim.generic "fused.bias_act"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.generic "fused.rms_norm"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.generic "fused.rms_norm"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.generic "fused.bias_act"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.generic "fused.rms_norm"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.generic "fused.rms_norm"(%{{.*}}) {sim.recompute = #sim<recompute "selective">
// OSS:       sim.phase "optimizer"
