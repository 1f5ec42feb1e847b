// A GPU variant is stored by its canonical text (keys sorted, shortest numbers), which
// set-target reads back; a bad key is one line naming the variant and the key.
// RUN: charon-opt %s -p 'set-target{hardware="H100:hbm_bw=6.7e12,hbm=141e9" gpus=8}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware="H100:hbm_bw=6.7e12,hbm=141e9" gpus=8}' | charon-opt -p 'set-target{gpus=8 hardware="H100-SXM5-80GB:hbm=1.41e11,hbm_bw=6.7e12"}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware="H100:power_cap=500" gpus=8},cost-annotate,lower-to-events' -t simulate | filecheck %s --check-prefix=CAP
// RUN: not charon-opt %s -p 'set-target{hardware="H100:hbm_bandwidth=1e12"}' 2>&1 | filecheck %s --check-prefix=BAD

// CHECK: builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB:hbm=1.41e11,hbm_bw=6.7e12", gpus = 8, gpus_per_node = 8>}
// CAP: "hardware": "H100-SXM5-80GB:power_cap=500"
// CAP: "energy_j":
// BAD: charon-opt: error: set-target: option 'hardware': GPU variant 'H100:hbm_bandwidth=1e12': unknown key 'hbm_bandwidth' (known: {{.*}}hbm_bw{{.*}})
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
}
