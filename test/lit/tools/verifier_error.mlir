// RUN: not charon-opt %s 2>&1 | filecheck %s
// RUN: not charon-opt %s 2>&1 | wc -l | filecheck %s --check-prefix=ONE-LINE
// CHECK: {{.*}}verifier_error.mlir:9:3: error: 'sim.matmul' op contracting dims differ: lhs K = 8, rhs K = 4
// CHECK-NOT: Traceback
// ONE-LINE: {{^ *1$}}

builtin.module {
  %a = sim.input "a" : tensor<4x8xbf16>
  %b = sim.matmul %a, %a : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
}
