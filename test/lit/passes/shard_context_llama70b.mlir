// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-context{cp=4 mode=ring}' | filecheck %s --check-prefix=RING
// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-context{cp=4 mode=ulysses}' | filecheck %s --check-prefix=ULYSSES
// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=8},shard-context{cp=2 mode=ring}' | filecheck %s --check-prefix=TPCP
// RUN: not charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-context{cp=3}' 2>&1 | filecheck %s --check-prefix=ERR

// Llama-3.1-70B, seq 32: each of 4 ranks holds 8 tokens (two load-balanced chunks of 4).

// RING:       coll.grid @mesh(axes = ["cp"], shape = 4)
// RING:       sim.input "tokens" {tokens} : tensor<1x8xi64>
// RING:       sim.input "positions" : tensor<1x8xi64>
// RING:       sim.input "labels" : tensor<1x8xi64>
// RING-LABEL: sim.phase "forward"
// RING:       sim.embedding {{.*}} : (tensor<128256x8192xbf16>, tensor<1x8xi64>) -> tensor<1x8x8192xbf16>
// RING:       sim.repeat 80
// Three ring steps: each passes the kv block on and receives the next one.
// RING:       coll.send {{.*}} shift 1 : tensor<1x8x8x128xbf16>
// RING:       coll.recv on @mesh ["cp"] shift -1 : tensor<1x8x8x128xbf16>
// RING:       coll.send {{.*}} shift 1 : tensor<1x8x8x128xbf16>
// RING:       coll.recv on @mesh ["cp"] shift -1 : tensor<1x8x8x128xbf16>
// RING:       coll.send {{.*}} shift 1 : tensor<1x8x8x128xbf16>
// RING:       coll.recv on @mesh ["cp"] shift -1 : tensor<1x8x8x128xbf16>
// RING:       sim.attention {{.*}} {causal} : (tensor<1x8x64x128xbf16>, tensor<1x8x8x128xbf16>, tensor<1x8x8x128xbf16>) -> tensor<1x8x64x128xbf16>
// RING:       sim.attention {{.*}} : (tensor<1x4x64x128xbf16>, tensor<1x8x8x128xbf16>, tensor<1x8x8x128xbf16>) -> tensor<1x4x64x128xbf16>
// RING:       sim.attention {{.*}} : (tensor<1x4x64x128xbf16>, tensor<1x8x8x128xbf16>, tensor<1x8x8x128xbf16>) -> tensor<1x4x64x128xbf16>
// RING:       sim.attention {{.*}} : (tensor<1x4x64x128xbf16>, tensor<1x8x8x128xbf16>, tensor<1x8x8x128xbf16>) -> tensor<1x4x64x128xbf16>
// RING-NEXT:  sim.generic "ring_attention.merge"
// The loss sums over the split tokens.
// RING:       "aten.nll_loss_forward"
// RING:       coll.all_reduce %{{.*}} on @mesh ["cp"] : tensor<f32>
// RING-LABEL: sim.phase "backward"
// RING:       coll.all_reduce %{{.*}} on @mesh ["cp"] {coll.grad_sync} : tensor<8192x28672xbf16>

// ULYSSES-LABEL: sim.phase "forward"
// ULYSSES:       coll.all_to_all {{.*}} split 2 concat 1 : tensor<1x8x64x128xbf16> -> tensor<1x32x16x128xbf16>
// ULYSSES:       coll.all_to_all {{.*}} split 2 concat 1 : tensor<1x8x8x128xbf16> -> tensor<1x32x2x128xbf16>
// ULYSSES:       sim.attention {{.*}} {causal} : (tensor<1x32x16x128xbf16>, tensor<1x32x2x128xbf16>, tensor<1x32x2x128xbf16>) -> tensor<1x32x16x128xbf16>
// ULYSSES-NEXT:  coll.all_to_all {{.*}} split 1 concat 2 : tensor<1x32x16x128xbf16> -> tensor<1x8x64x128xbf16>

// After TP=8 (8 query heads, 1 kv head a rank), CP=2 on top.
// TPCP:       coll.grid @mesh(axes = ["cp", "tp"], shape = 2x8)
// TPCP:       sim.attention {{.*}} {causal} : (tensor<1x16x8x128xbf16>, tensor<1x16x1x128xbf16>, tensor<1x16x1x128xbf16>) -> tensor<1x16x8x128xbf16>
// TPCP:       coll.all_reduce %{{.*}} on @mesh ["tp"] : tensor<1x16x8192xbf16>

// ERR: charon-opt: error: shard-context: option 'cp' (3) does not divide the sequence length (32)
