// A GPU count past 2^31-1 is refused, as `charon simulate --gpus` refuses it
// (it was accepted and printed "gpus": 1000000000000).
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=1000000000000}' 2>&1 | filecheck %s --check-prefix=GPUS
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus-per-node=4294967296}' 2>&1 | filecheck %s --check-prefix=NODE
// RUN: charon-opt %s -p 'set-target{hardware=H100 gpus=2147483640}' | filecheck %s

// GPUS: charon-opt: error: set-target: options 'gpus' (1000000000000) and 'gpus-per-node' (8) must be <= 2147483647
// NODE: charon-opt: error: set-target: options 'gpus' (8) and 'gpus-per-node' (4294967296) must be <= 2147483647
// CHECK: sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 2147483640, gpus_per_node = 8>

builtin.module {
  %x = sim.input "x" : tensor<8x16xbf16>
}
