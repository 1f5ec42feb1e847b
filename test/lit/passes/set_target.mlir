// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=8}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=A100 gpus=16 gpus-per-node=4}' | filecheck %s --check-prefix=ALIAS
// RUN: not charon-opt %s -p 'set-target{hardware=Z100}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not charon-opt %s -p 'set-target' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=4}' 2>&1 | filecheck %s --check-prefix=SMALL

// CHECK: builtin.module attributes {sim.target = {hardware = "H100-SXM5-80GB", gpus = 8 : i64, gpus_per_node = 8 : i64}}
// ALIAS: builtin.module attributes {sim.target = {hardware = "A100-SXM4-80GB", gpus = 16 : i64, gpus_per_node = 4 : i64}}
// UNKNOWN: charon-opt: error: set-target: option 'hardware': unknown GPU 'Z100' (known: {{.*}}H100-SXM5-80GB{{.*}})
// MISSING: charon-opt: error: set-target: option 'hardware' is required
// SMALL: charon-opt: error: set-target: grid @mesh spans 8 devices but option 'gpus' is 4
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
}
