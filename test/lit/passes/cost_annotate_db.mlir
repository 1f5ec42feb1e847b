// Measure this module's ops on the CPU, then price them from the database only.
// RUN: rm -f %t.db && charon profile --device cpu --ops-from %s --db %t.db --sweep '' --repeats 2 --warmup 1 2>&1 | filecheck %s --check-prefix=PROFILE
// RUN: env CHARON_PROFILE_DB=%t.db CHARON_PROFILE_DEVICE=cpu charon-opt %s -p 'set-target{hardware=H100 gpus=1},cost-annotate{engines=db}' | filecheck %s
// Without CHARON_PROFILE_DEVICE the database prices for the target GPU, where it has nothing.
// RUN: env CHARON_PROFILE_DB=%t.db charon-opt %s -p 'set-target{hardware=H100 gpus=1},cost-annotate{engines=db,analytic}' | filecheck %s --check-prefix=H100
// RUN: printf 'not a database at all' > %t.bad && not env CHARON_PROFILE_DB=%t.bad charon-opt %s -p 'set-target{hardware=H100 gpus=1},cost-annotate{engines=db}' 2>&1 | filecheck %s --check-prefix=CORRUPT

// PROFILE: cpu (torch {{.*}}): measured 4, already in the database 0

// CHECK: sim.matmul {{.*}}engine = "db"
// CHECK: sim.elementwise "silu" {{.*}}engine = "db"
// CHECK: sim.attention {{.*}}engine = "db"
// CHECK: sim.reduce "sum" {{.*}}engine = "db"

// H100-COUNT-4: engine = "analytic"

// CORRUPT: charon-opt: error: profile database {{.*}}.bad is not a valid Charon profile database: file is not a database
builtin.module {
  %x = sim.input "x" : tensor<128x64xf32>
  %w = sim.param "w" : tensor<64x64xf32>
  %q = sim.input "q" : tensor<1x64x2x32xf32>
  %y = sim.matmul %x, %w : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %s = sim.elementwise "silu" %y : tensor<128x64xf32> -> tensor<128x64xf32>
  %a = sim.attention %q, %q, %q {causal, flash} : (tensor<1x64x2x32xf32>, tensor<1x64x2x32xf32>, tensor<1x64x2x32xf32>) -> tensor<1x64x2x32xf32>
  %r = sim.reduce "sum" %s [1] : tensor<128x64xf32> -> tensor<128xf32>
}
