// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events' | filecheck %s
// RUN: not charon-opt %s -p 'set-target{hardware=H100},lower-to-events' 2>&1 | filecheck %s --check-prefix=UNPRICED
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=8},data-parallel{dp=2},cost-annotate,lower-to-events' 2>&1 | filecheck %s --check-prefix=GRID
// GRID: charon-opt: error: lower-to-events: grid @{{.*}} spans 16 devices but the target has 8

// A repeat of 4 layers becomes one event.loop (never unrolled); the all_reduce goes
// to the tp comm lane and waits for the matmul that produced its operand; the
// view is free and passes its producer's token through.
// CHECK:      event.program @main ranks 8 attributes {tokens = 4096 : i64} {
// CHECK-NEXT:   event.stream @compute compute
// CHECK-NEXT:   event.stream @comm_tp comm {axes = ["tp"]}
// CHECK-NEXT:   %[[START:.*]] = event.wait()
// CHECK-NEXT:   %[[LOOP:.*]] = event.loop 4 iter(%[[START]]) attributes {label = "repeat"} {
// CHECK-NEXT:   ^{{.*}}(%[[PREV:.*]]: !event.token):
// CHECK-NEXT:     %[[MM:.*]] = event.compute "matmul" on @compute duration {{.*}} after(%[[PREV]]) {engine = "analytic", flops = 8589934592 : i64}
// CHECK-NEXT:     %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration {{.*}} after(%[[MM]]) {engine = "analytic", bytes = 14680064 : i64, group = 8 : i64, link = #event<link "scale-up">}
// CHECK-NEXT:     %[[ADD:.*]] = event.compute "elementwise" on @compute duration {{.*}} after(%[[AR]], %[[PREV]])
// CHECK-NEXT:     event.yield %[[ADD]]
// CHECK-NEXT:   }
// CHECK-NEXT:   event.compute "norm" on @compute duration {{.*}} after(%[[LOOP]])
// CHECK-NEXT: }
// CHECK-NOT: sim.
// UNPRICED: charon-opt: error: lower-to-events: 'sim.matmul' has no cost; run cost-annotate first
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %x = sim.input "tokens" {tokens} : tensor<4096x1024xbf16>
  %ws = sim.param "w" : tensor<4x1024x1024xbf16>
  %wn = sim.param "wn" : tensor<1024xbf16>
  %out = sim.phase "forward" -> tensor<4096x1024xbf16> {
    %r = sim.repeat 4 iter(%x : tensor<4096x1024xbf16>) slices(%ws : tensor<4x1024x1024xbf16>) -> (tensor<4096x1024xbf16>) {
    ^bb0(%h: tensor<4096x1024xbf16>, %w: tensor<1024x1024xbf16>):
      %y = sim.matmul %h, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
      %z = coll.all_reduce %y on @mesh ["tp"] : tensor<4096x1024xbf16>
      %zv = sim.view %z : tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
      %s = sim.elementwise "add" %zv, %h : tensor<4096x1024xbf16>, tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
      sim.yield %s : tensor<4096x1024xbf16>
    }
    %n = sim.norm "rms" %r, %wn : tensor<4096x1024xbf16>, tensor<1024xbf16>
    sim.yield %n : tensor<4096x1024xbf16>
  }
}
