// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events{host-launch=2e-05}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events' | filecheck %s --check-prefix=OFF
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events{host-launch=-1.0}' 2>&1 | filecheck %s --check-prefix=BAD

// The host issues every kernel and collective in program order, 20 us each, on a
// stream of its own; each event waits for its launch. The host waits for nothing
// on the GPU but the optimizer's barrier: its next launch comes after it.
// CHECK:      event.stream @host host
// CHECK:      %[[L0:.*]] = event.launch "launch" on @host duration 2.000000e-05
// CHECK-NEXT: %[[MM:.*]] = event.compute "matmul" on @compute duration {{.*}} after(%[[L0]])
// CHECK-NEXT: %[[L1:.*]] = event.launch "launch" on @host duration 2.000000e-05
// CHECK-NEXT: %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration {{.*}} after(%[[MM]], %[[L1]])
// CHECK-NEXT: %[[L2:.*]] = event.launch "launch" on @host duration 2.000000e-05
// CHECK-NEXT: event.compute "elementwise" on @compute duration {{.*}} after(%[[AR]], %[[L2]])
// CHECK:      %[[B:.*]] = event.barrier
// CHECK-NEXT: %[[L3:.*]] = event.launch "launch" on @host duration 2.000000e-05 after(%[[B]])
// CHECK-NEXT: event.compute "optimizer_step" on @compute duration {{.*}} after(%[[B]], %[[L3]])

// OFF-NOT: event.launch
// OFF-NOT: @host

// BAD: charon-opt: error: lower-to-events: option 'host-launch' must be a number of seconds >= 0, got -1.0
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %x = sim.input "x" : tensor<4096x1024xbf16>
  %w = sim.param "w" : tensor<1024x1024xbf16>
  %g = sim.input "grad" : tensor<1024x1024xbf16>
  %out = sim.phase "forward" -> tensor<4096x1024xbf16> {
    %y = sim.matmul %x, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
    %ar = coll.all_reduce %y on @mesh ["tp"] : tensor<4096x1024xbf16>
    %s = sim.elementwise "add" %ar, %x : tensor<4096x1024xbf16>, tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
    sim.yield %s : tensor<4096x1024xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%w : tensor<1024x1024xbf16>) grads (%g : tensor<1024x1024xbf16>)
    sim.yield
  }
}
