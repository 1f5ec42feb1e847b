// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4}' | filecheck %s --check-prefix=DDP
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 overlap=false}' | filecheck %s --check-prefix=NO-OVERLAP
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=1}' | filecheck %s --check-prefix=ZERO1
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=3}' | filecheck %s --check-prefix=ZERO3
// RUN: charon-opt %S/Inputs/large_vocab.mlir -p 'data-parallel{dp=4 zero=1 bucket-mb=1}' | filecheck %s --check-prefix=BUCKET
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=1 overlap-param-gather=true}' | filecheck %s --check-prefix=PARAM-GATHER
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=3 overlap-param-gather=true}' 2>&1 | filecheck %s --check-prefix=PARAM-GATHER-ERR
// RUN: charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=1 overlap-param-gather=true},recompute{policy=full}' | filecheck %s --check-prefix=PARAM-GATHER-FULL
// RUN: charon-opt %S/Inputs/moe_router_trained.mlir -p 'shard-expert{ep=4},data-parallel{dp=2 zero=1}' | filecheck %s --check-prefix=EP
// RUN: not charon-opt %S/../lowering/Inputs/eight_layers.mlir -p 'data-parallel{dp=4 zero=7}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: charon-opt %S/shard_context.mlir -p 'shard-context{cp=2},data-parallel{dp=2 zero=1}' | filecheck %s --check-prefix=CP
// RUN: not charon-opt %S/shard_context.mlir -p 'data-parallel{dp=2 zero=1},shard-context{cp=2}' 2>&1 | filecheck %s --check-prefix=CP-AFTER
// RUN: not charon-opt %S/Inputs/moe_router_trained.mlir -p 'data-parallel{dp=2},shard-expert{ep=2}' 2>&1 | filecheck %s --check-prefix=EP-AFTER

// Plain DDP reduces each layer's gradient is reduced inside the backward body, as soon as it exists.
// DDP:      sim.data_parallel = #sim.data_parallel<dp = 4, zero = 0, bucket_mb = 25, overlap = true, overlap_param_gather = false>
// DDP:      coll.grid @mesh(axes = ["dp"], shape = 4)
// DDP:      sim.repeat 8 {{.*}} {reverse}
// DDP:        %[[DW:.*]] = sim.view
// DDP-NEXT:   %[[B:.*]] = sim.generic "grad_bucket"(%[[DW]]) {{.*}} : (tensor<64x64xbf16>) -> tensor<4096xbf16>
// DDP-NEXT:   coll.all_reduce %[[B]] on @mesh ["dp"] : tensor<4096xbf16>
// DDP-NEXT:   sim.yield

// NO-OVERLAP: %[[RB:.*]], %[[GRADS:.*]] = sim.repeat 8 {{.*}} {reverse}
// NO-OVERLAP: %[[B:.*]] = sim.generic "grad_bucket"(%[[GRADS]]) {{.*}} : (tensor<8x64x64xbf16>) -> tensor<32768xbf16>
// NO-OVERLAP-NEXT: coll.all_reduce %[[B]] on @mesh ["dp"]

// ZeRO-1: reduce_scatter of gradients, a sharded step, all_gather of the update.
// ZERO1:      coll.reduce_scatter %{{.*}} on @mesh ["dp"] axis 0 : tensor<4096xbf16> -> tensor<1024xbf16>
// ZERO1:      sim.phase "optimizer" {
// ZERO1:        %[[P:.*]], %{{.*}}, %{{.*}} = sim.generic "zero_shard"
// ZERO1:        %[[U:.*]], %{{.*}}, %{{.*}} = sim.optimizer_step "adamw"(%[[P]], {{.*}} -> tensor<16000xbf16>, tensor<8192xbf16>, tensor<16000xbf16>
// ZERO1-NEXT:   %[[PB:.*]] = sim.generic "param_bucket"(%[[U]],
// ZERO1-NEXT:   coll.all_gather %[[PB]] on @mesh ["dp"] axis 0

// ZeRO-3: every layer gathers its parameters before it runs, forward and backward.
// ZERO3:      sim.repeat 8
// ZERO3-NEXT: ^{{.*}}(%{{.*}}: tensor<1x64x64xbf16>, %[[W:.*]]: tensor<64x64xbf16>):
// ZERO3-NEXT:   %[[S:.*]] = sim.generic "param_shard_bucket"(%[[W]])
// ZERO3-NEXT:   %[[G:.*]] = coll.all_gather %[[S]] on @mesh ["dp"] axis 0 : tensor<1024xbf16> -> tensor<4096xbf16>
// ZERO3-NEXT:   %[[FULL:.*]] = sim.generic "param_unpack"(%[[G]]) {{.*}} -> tensor<64x64xbf16>
// ZERO3-NEXT:   sim.matmul %{{.*}}, %[[FULL]]
// ZERO3:      sim.repeat 8 {{.*}} {reverse}
// ZERO3:        coll.all_gather
// After the step, the layers' parameters stay sharded; only the embedding and
// the head, which no layer gathers, are all-gathered.
// ZERO3:      sim.phase "optimizer" {
// ZERO3:        %[[U:.*]], %{{.*}}, %[[UH:.*]] = sim.optimizer_step "adamw"
// ZERO3-NEXT:   %[[PB:.*]] = sim.generic "param_bucket"(%[[U]], %[[UH]]) {{.*}} -> tensor<32000xbf16>
// ZERO3-NEXT:   coll.all_gather %[[PB]] on @mesh ["dp"] axis 0 : tensor<32000xbf16> -> tensor<128000xbf16>
// ZERO3-NEXT:   sim.yield

// A bucket holds bucket-mb MiB of gradients, reduce-scattered into its dp
// shards; the updated parameters are all-gathered in the same layout: a
// collective's gathered output is one bucket (1 MiB: 524288 bf16 elements).
// BUCKET:      sim.data_parallel = #sim.data_parallel<dp = 4, zero = 1, bucket_mb = 1, overlap = true, overlap_param_gather = false>
// BUCKET:      %[[G:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = sim.generic "grad_bucket"
// BUCKET-NEXT: coll.reduce_scatter %[[G]] on @mesh ["dp"] axis 0 : tensor<524288xbf16> -> tensor<131072xbf16>
// BUCKET:      sim.phase "optimizer" {
// BUCKET:      %[[P:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LAST:.*]] = sim.generic "param_bucket"
// BUCKET-NEXT: coll.all_gather %[[P]] on @mesh ["dp"] axis 0 : tensor<131072xbf16> -> tensor<524288xbf16>
// BUCKET-COUNT-7: coll.all_gather %{{.*}} : tensor<131072xbf16> -> tensor<524288xbf16>
// BUCKET-NEXT: coll.all_gather %[[LAST]] on @mesh ["dp"] axis 0 : tensor<8192xbf16> -> tensor<32768xbf16>
// BUCKET-NEXT: sim.yield

// ERR: charon-opt: error: data-parallel: option 'zero' must be 0, 1, 2 or 3, got 7

// overlap-param-gather: each layer gathers its updated parameters before it runs
// in the forward, marked to run in the step's first forward only; the backward
// gathers nothing, and after the step only the embedding and the head are gathered.
// PARAM-GATHER:      sim.data_parallel = #sim.data_parallel<{{.*}}zero = 1, {{.*}}overlap_param_gather = true>
// PARAM-GATHER:      sim.repeat 8
// PARAM-GATHER-NEXT: ^{{.*}}(%{{.*}}: tensor<1x64x64xbf16>, %[[W:.*]]: tensor<64x64xbf16>):
// PARAM-GATHER-NEXT:   %[[S:.*]] = sim.generic "param_shard_bucket"(%[[W]]) {sim.first_forward,
// PARAM-GATHER-NEXT:   %[[G:.*]] = coll.all_gather %[[S]] on @mesh ["dp"] axis 0 {sim.first_forward} : tensor<1024xbf16> -> tensor<4096xbf16>
// PARAM-GATHER-NEXT:   %[[FULL:.*]] = sim.generic "param_unpack"(%[[G]]) {sim.first_forward,
// PARAM-GATHER-NEXT:   sim.matmul %{{.*}}, %[[FULL]]
// PARAM-GATHER:      sim.repeat 8 {{.*}} {reverse}
// PARAM-GATHER-NOT:    coll.all_gather
// PARAM-GATHER:      sim.phase "optimizer" {
// PARAM-GATHER:        %[[U:.*]], %{{.*}}, %[[UH:.*]] = sim.optimizer_step "adamw"
// PARAM-GATHER-NEXT:   %[[PB:.*]] = sim.generic "param_bucket"(%[[U]], %[[UH]]) {{.*}} -> tensor<32000xbf16>
// PARAM-GATHER-NEXT:   coll.all_gather %[[PB]] on @mesh ["dp"] axis 0 : tensor<32000xbf16> -> tensor<128000xbf16>
// PARAM-GATHER-NEXT:   sim.yield

// Full recomputation re-runs the layer on the parameter itself: the step's one
// gather happened in the first forward.
// PARAM-GATHER-FULL:      sim.repeat 8 {{.*}} {reverse}
// PARAM-GATHER-FULL-NEXT: ^{{.*}}(%{{.*}}: tensor<1x64x64xbf16>, %[[W:.*]]: tensor<64x64xbf16>, %[[A:.*]]: tensor<1x64x64xbf16>):
// PARAM-GATHER-FULL-NEXT:   sim.matmul %[[A]], %[[W]] {sim.recompute = #sim<recompute "full">}
// PARAM-GATHER-FULL-NOT:    coll.all_gather
// PARAM-GATHER-FULL:        sim.yield

// PARAM-GATHER-ERR: charon-opt: error: data-parallel: option 'overlap-param-gather' needs zero 1 or 2 (only they gather updated parameters), got zero 3

// Expert parallelism is carved out of data parallelism: the ep ranks of a dp rank
// are replicas of the dense router, reduced and sharded over dp x ep; the routed
// experts, which each ep rank holds a slice of, over dp alone.
// EP:      coll.grid @mesh(axes = ["dp", "ep"], shape = 2x4)
// EP:      coll.reduce_scatter %{{.*}} on @mesh ["dp", "ep"] axis 0 : tensor<256xbf16> -> tensor<32xbf16>
// EP:      coll.reduce_scatter %{{.*}} on @mesh ["dp"] axis 0 : tensor<9216xbf16> -> tensor<4608xbf16>
// EP:      sim.optimizer_step "adamw"(%{{.*}} : tensor<32xbf16>)
// EP:      coll.all_gather %{{.*}} on @mesh ["dp", "ep"] axis 0 : tensor<32xbf16> -> tensor<256xbf16>
// EP:      sim.optimizer_step "adamw"(%{{.*}}, %{{.*}} : tensor<3072xbf16>, tensor<1536xbf16>)
// EP:      coll.all_gather %{{.*}} on @mesh ["dp"] axis 0 : tensor<4608xbf16> -> tensor<9216xbf16>

// Context-parallel ranks hold whole weights: the group is dp x cp, shard-context's
// per-micro-batch cp sums of the weight gradients fold into its one reduction, and
// ZeRO shards over all four ranks.
// CP:      coll.grid @mesh(axes = ["dp", "cp"], shape = 2x2)
// CP-NOT:  coll.grad_sync
// CP:      coll.reduce_scatter %{{.*}} on @mesh ["dp", "cp"] axis 0 : tensor<36992xbf16> -> tensor<9248xbf16>
// CP:      sim.phase "optimizer"
// CP:      coll.all_gather %{{.*}} on @mesh ["dp", "cp"] axis 0 : tensor<9248xbf16> -> tensor<36992xbf16>

// A cp or ep axis added after data-parallel would not be in its reduction group.
// CP-AFTER: charon-opt: error: shard-context: run it before data-parallel, which groups the gradients' reduction by the grid axes it finds
// EP-AFTER: charon-opt: error: shard-expert: run it before data-parallel, which groups the gradients' reduction by the grid axes it finds
