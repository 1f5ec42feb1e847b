// RUN: charon-opt %s | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// The fields an event declares are properties: flops, engine; bytes, group, link, channel, src, dst.
// GENERIC: "event.comm"(%{{.*}}) <{label = "send", stream = @comm_tp, duration_s = 1.000000e-05 : f64, engine = "analytic", bytes = 64 : i64, group = 2 : i64, link = #event<link "scale-out">, channel = "pp0", src = 0 : i64, dst = 1 : i64}>

builtin.module {
  event.program @stage0 ranks 8 {
    event.stream @compute compute
    event.stream @comm_tp comm {axes = ["tp"]}
    event.stream @host host
    %start = event.wait()
    %issue = event.launch "launch" on @host duration 2.0e-05
    %mm = event.compute "matmul" on @compute duration 1.5e-03 after(%start, %issue) {flops = 1000 : i64}
    %ar = event.comm "all_reduce" on @comm_tp duration 2.0e-04 after(%mm) {bytes = 64 : i64, group = 8 : i64}
    %send = event.comm "send" on @comm_tp duration 1.0e-05 after(%ar) {engine = "analytic", bytes = 64 : i64, group = 2 : i64, link = #event<link "scale-out">, channel = "pp0", src = 0 : i64, dst = 1 : i64}
    %layers = event.loop 4 iter(%ar) {
    ^bb0(%prev: !event.token):
      %a = event.compute "attention" on @compute duration 1.0e-03 after(%prev)
      %b = event.comm "all_reduce" on @comm_tp duration 1.0e-04 after(%a)
      event.yield %b
    }
    %end = event.wait(%layers, %mm)
  }
}
// CHECK:      event.program @stage0 ranks 8 {
// CHECK-NEXT:   event.stream @compute compute
// CHECK-NEXT:   event.stream @comm_tp comm {axes = ["tp"]}
// CHECK-NEXT:   event.stream @host host
// CHECK-NEXT:   %[[START:.*]] = event.wait()
// CHECK-NEXT:   %[[ISSUE:.*]] = event.launch "launch" on @host duration 2.000000e-05
// CHECK-NEXT:   %[[MM:.*]] = event.compute "matmul" on @compute duration 1.500000e-03 after(%[[START]], %[[ISSUE]]) {flops = 1000 : i64}
// CHECK-NEXT:   %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration 2.000000e-04 after(%[[MM]]) {bytes = 64 : i64, group = 8 : i64}
// CHECK-NEXT:   %{{.*}} = event.comm "send" on @comm_tp duration 1.000000e-05 after(%[[AR]]) {engine = "analytic", bytes = 64 : i64, group = 2 : i64, link = #event<link "scale-out">, channel = "pp0", src = 0 : i64, dst = 1 : i64}
// CHECK-NEXT:   %[[L:.*]] = event.loop 4 iter(%[[AR]]) {
// CHECK-NEXT:   ^{{.*}}(%[[PREV:.*]]: !event.token):
// CHECK-NEXT:     %[[A:.*]] = event.compute "attention" on @compute duration 1.000000e-03 after(%[[PREV]])
// CHECK-NEXT:     %[[B:.*]] = event.comm "all_reduce" on @comm_tp duration 1.000000e-04 after(%[[A]])
// CHECK-NEXT:     event.yield %[[B]]
// CHECK-NEXT:   }
// CHECK-NEXT:   event.wait(%[[L]], %[[MM]])
// CHECK-NEXT: }

// What a program states of its ranks (stage, tokens, recompute_flops, hardware),
// a loop's label and the schedule item a wait ends are declared properties,
// printed in the attribute dictionary.
builtin.module {
  event.program @stage1 ranks 4 attributes {stage = 1 : i64, tokens = 8192 : i64, recompute_flops = 2.5e+12 : f64, hardware = "H200-SXM-141GB"} {
    event.stream @compute compute
    %s = event.wait()
    %l = event.loop 2 iter(%s) attributes {label = "F0,B0"} {
    ^bb0(%t: !event.token):
      %f = event.compute "matmul" on @compute duration 1.0e-03 after(%t)
      %e = event.wait(%f) {item = #event<item F>}
      event.yield %e
    }
  }
}
// CHECK:      event.program @stage1 ranks 4 attributes {stage = 1 : i64, tokens = 8192 : i64, recompute_flops = 2.500000e+12 : f64, hardware = "H200-SXM-141GB"} {
// CHECK:        %{{.*}} = event.loop 2 iter(%{{.*}}) attributes {label = "F0,B0"} {
// CHECK:          %[[F:.*]] = event.compute "matmul"
// CHECK-NEXT:     %[[E:.*]] = event.wait(%[[F]]) {item = #event<item F>}
// CHECK-NEXT:     event.yield %[[E]]
// GENERIC:    "event.program"() <{sym_name = "stage1", ranks = 4 : i64, stage = 1 : i64, tokens = 8192 : i64, recompute_flops = 2.500000e+12 : f64, hardware = "H200-SXM-141GB"}>
// GENERIC:    "event.loop"(%{{.*}}) <{count = 2 : i64, label = "F0,B0"}>
// GENERIC:    "event.wait"(%{{.*}}) <{item = #event<item F>}>

// A copy stream (the copy engines' transfers to and from host memory, e.g. CPU
// activation offloading's) carries event.comm; its axes name what its exposed
// time is reported under.
builtin.module {
  event.program @main ranks 1 {
    event.stream @compute compute
    event.stream @comm_host_d2h copy {axes = ["host"]}
    %s = event.wait()
    %c = event.comm "offload" on @comm_host_d2h duration 3.0e-04 after(%s) {bytes = 8192 : i64, group = 1 : i64}
  }
}
// CHECK:      event.stream @comm_host_d2h copy {axes = ["host"]}
// CHECK:      event.comm "offload" on @comm_host_d2h duration 3.000000e-04 after(%{{.*}}) {bytes = 8192 : i64, group = 1 : i64}
