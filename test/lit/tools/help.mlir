// `charon-opt --help` lists each Charon-IR pass once, with its options and their
// defaults, as `mlir-opt --help` does (it listed every pass of every xDSL dialect
// as one comma-joined word list broken at hyphens: "shard-\ntensor").
// RUN: charon-opt --help | filecheck %s
// RUN: charon-opt --help | filecheck %s --check-prefix=ONCE

// CHECK:      -t TARGET, --target TARGET
// CHECK-NEXT:   what to print: mlir, simulate
// CHECK:      -p PASSES, --passes PASSES
// CHECK-NEXT:   pipeline of passes, e.g.
// CHECK:      Charon-IR passes (-p 'name{option=value option=value},name'):
// CHECK-NEXT:   set-target             Attach the hardware a module is compiled for (`sim.target` on the module).
// CHECK-NEXT:                          options: hardware='' gpus=0 gpus-per-node=0 cluster=''
// CHECK:        shard-tensor           Megatron tensor parallelism on the `tp` axis of `coll.grid @mesh`.
// CHECK-NEXT:                          options: tp=1 experts=true
// CHECK:        pipeline               Split a training step over pipeline stages.
// CHECK-NEXT:                          options: pp=1 vpp=1 schedule=1f1b microbatches=0 layers=(none) scatter-gather=false
// CHECK:        recompute              Activation recomputation (Korthikanti et al. 2022,
// CHECK-NEXT:                          options: policy=none|selective|selective-op|full
// CHECK:      xDSL's own passes are accepted too (see xdsl-opt --help).

// ONCE:     shard-tensor{{ +}}Megatron
// ONCE-NOT: shard-tensor{{ +}}Megatron
// ONCE-NOT: {{[a-z]-$}}
