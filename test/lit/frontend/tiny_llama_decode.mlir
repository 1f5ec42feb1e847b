// RUN: charon import %S/Inputs/tiny-llama.json --mode decode --seq-len 32 --no-cache -o - 2>/dev/null | filecheck %s

// One decode step: a single new token per sequence reads the 32 cached tokens
// and appends its own keys and values.

// CHECK-LABEL: sim.phase "decode"
// CHECK:       sim.repeat 2 iter(%{{.*}} : tensor<1x1x64xbf16>)
// CHECK:       %[[K:.*]], %[[V:.*]] = sim.kv_cache_read %{{.*}}, %{{.*}} : tensor<1x1x2x16xbf16>, tensor<1x1x2x16xbf16> -> tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>
// CHECK-NEXT:  sim.kv_cache_write
// CHECK:       sim.attention %{{.*}}, %[[K]], %[[V]] {causal} : (tensor<1x1x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>) -> tensor<1x1x4x16xbf16>
// CHECK-NOT:   sim.phase "backward"
