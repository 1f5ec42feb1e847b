// RUN: charon-opt %examples/transformer_layer.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events' -t simulate | filecheck %s
// The target finishes an unlowered module with the default pipeline itself.
// RUN: charon-opt %examples/transformer_layer.mlir -p 'set-target{hardware=H100-SXM5-80GB}' -t simulate | filecheck %s
// RUN: charon-opt %examples/mlp.mlir --pass-pipeline='builtin.module(set-target{hardware=H100 gpus=1})' -t 'simulate{compute_slowdown=0.1}' | filecheck %s --check-prefix=MLP
// A negative slowdown used to divide by zero in the interpreter (a traceback).
// RUN: not charon-opt %examples/mlp.mlir -p 'set-target{hardware=H100 gpus=1}' -t 'simulate{compute_slowdown=-1.0}' 2>&1 | filecheck %s --check-prefix=SLOWDOWN
// SLOWDOWN: charon-opt: error: simulate: option 'compute_slowdown' must be a finite number >= 0, got -1.0
// Stock xdsl-opt sees every Charon dialect, pass and target through the plugin.
// RUN: xdsl-opt %examples/transformer_layer.mlir -p 'set-target{hardware=H100},cost-annotate' | filecheck %s --check-prefix=XDSL

// CHECK:      "iteration_time_s": {{[0-9.e-]+}},
// CHECK:      "breakdown": {
// CHECK-NEXT:   "compute_s":
// CHECK-NEXT:   "exposed_comm_s": {
// CHECK-NEXT:     "tp": {{[0-9.e-]+}}
// CHECK-NEXT:   },
// CHECK-NEXT:   "bubble_s":
// CHECK:      "streams": {
// CHECK-NEXT:   "compute": {
// CHECK-NEXT:     "busy_s":
// CHECK:        "comm_tp": {
// CHECK-NEXT:     "busy_s":
// CHECK:      "engines": {
// CHECK-NEXT:   "analytic": 50
// MLP: "iteration_time_s"
// MLP: "compute"
// MLP-NOT: "comm_tp"
// XDSL: sim.matmul {{.*}}engine = "analytic"
