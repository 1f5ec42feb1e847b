// A pass that rewrites sim IR, run on a module already lowered to events, found nothing to
// rewrite and changed nothing (`lower-to-events,data-parallel{dp=2}` simulated dp = 1): it
// refuses in one line naming itself. set-target still takes a lowered module.
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,data-parallel{dp=2}' 2>&1 | filecheck %s --check-prefix=DP
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,recompute{policy=full}' 2>&1 | filecheck %s --check-prefix=RECOMPUTE
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,fuse' 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,memory-analysis' 2>&1 | filecheck %s --check-prefix=MEMORY
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,lower-to-events' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,fuse' 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// RUN: charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events' | not charon-opt -p 'fuse' 2>&1 | filecheck %s --check-prefix=FILE
// RUN: charon-opt %s -p 'set-target{hardware=H100 gpus=8},cost-annotate,lower-to-events,set-target{hardware=H100 gpus=8}' -t simulate | filecheck %s --check-prefix=TARGET

// DP: charon-opt: error: data-parallel: the module is already lowered to events; run data-parallel before lower-to-events
// RECOMPUTE: charon-opt: error: recompute: the module is already lowered to events; run recompute before lower-to-events
// FUSE: charon-opt: error: fuse: the module is already lowered to events; run fuse before lower-to-events
// MEMORY: charon-opt: error: memory-analysis: the module is already lowered to events; run memory-analysis before lower-to-events
// TWICE: charon-opt: error: lower-to-events: the module is already lowered to events{{$}}
// ONE-LINE: {{^ *1$}}
// FILE: charon-opt: error: fuse: the module is already lowered to events; run fuse before lower-to-events
// TARGET: "iteration_time_s"

builtin.module {
  %x = sim.input "x" : tensor<64x128xbf16>
  %w = sim.param "w" : tensor<128x256xbf16>
  %y = sim.matmul %x, %w : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16>
}
