// RUN: not charon-opt %s 2>&1 | filecheck %s
// RUN: not charon-opt %s 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// CHECK: {{.*}}malformed.mlir:8:1: error: Expected '>' after builtin parameter list
// CHECK-NOT: Traceback
// ONE-LINE: {{^ *1$}}
builtin.module {
  %x = sim.input "x" : tensor<4x4xbf16
}
