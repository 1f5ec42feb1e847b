// RUN: not charon-opt %s 2>&1 | filecheck %s
// A role outside ParamRole does not parse (the other role rules: invalid.mlir).

%p = sim.param "p" {role = #sim.role<bogus>} : tensor<4x4xbf16>
// CHECK: role_invalid.mlir:4:38: error: Expected `embedding`, `attention`, `mlp`, `router`, `expert`, `shared_expert`, `norm`, `head`, or `other`.
