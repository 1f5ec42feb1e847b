// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A schedule item outside ScheduleItem, or a link outside Link, does not parse
// (their round trip: ops.mlir).

event.program @p ranks 1 {
  %s = event.wait()
  %e = event.wait(%s) {item = #event<item X>}
}
// CHECK: enum_invalid.mlir:7:43
// CHECK: Expected `F`, `B`, or `W`.

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "all_reduce" on @comm duration 1.0 {bytes = 8 : i64, group = 8 : i64, link = #event<link "pcie">}
}
// CHECK: Expected `scale-up`, or `scale-out`.
