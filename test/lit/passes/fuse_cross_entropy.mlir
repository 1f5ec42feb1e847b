// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{loss=true}' | filecheck %s
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse' | filecheck %s --check-prefix=OFF

// The loss as Transformer Engine's parallel cross entropy runs it (24 tokens, vocabulary
// 256): one forward kernel from the bf16 logits (no fp32 copy, no fp32 softmax saved),
// and the backward reads a bf16 tensor of the logits' shape (the gradient the forward
// wrote in place of the logits) and writes the bf16 gradient the GEMMs read.

// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[L:.*]] = sim.matmul {{.*}} -> tensor<1x24x256xbf16>
// CHECK:       sim.generic "fused.cross_entropy"(%[[L]], %{{.*}}) {{.*}} : (tensor<1x24x256xbf16>, tensor<24xi64>) -> (tensor<f32>, tensor<f32>)
// CHECK-NOT:   tensor<24x256xf32>
// CHECK-LABEL: sim.phase "backward"
// CHECK:       %[[G:.*]] = sim.generic "fused.cross_entropy.recompute"(%{{.*}}) {{.*}} : (tensor<1x24x256xbf16>) -> tensor<24x256xbf16>
// CHECK-NEXT:  sim.generic "fused.cross_entropy_grad"(%{{.*}}, %[[G]], {{.*}} -> tensor<1x24x256xbf16>

// OFF:         sim.generic "aten._log_softmax"
// OFF-NOT:     fused.cross_entropy
