// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A schedule item outside ScheduleItem does not parse (its round trip: ops.mlir).

event.program @p ranks 1 {
  %s = event.wait()
  %e = event.wait(%s) {item = #event<item X>}
}
// CHECK: item_invalid.mlir:6:43
// CHECK: Expected `F`, `B`, or `W`.
