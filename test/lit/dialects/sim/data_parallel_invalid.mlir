// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A #sim.data_parallel states dp >= 1, a ZeRO stage 0-3, buckets of 1 MiB or more,
// and overlaps the parameters' gather only under ZeRO 1 or 2 (round trip: ops.mlir).

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 0, zero = 0, bucket_mb = 25, overlap = true, overlap_param_gather = false>} {}
// CHECK: #sim.data_parallel: dp must be >= 1, got 0

// -----

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 8, zero = 4, bucket_mb = 25, overlap = true, overlap_param_gather = false>} {}
// CHECK: #sim.data_parallel: zero must be 0, 1, 2 or 3, got 4

// -----

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 8, zero = 1, bucket_mb = 0, overlap = true, overlap_param_gather = false>} {}
// CHECK: #sim.data_parallel: bucket_mb must be >= 1, got 0

// -----

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 8, zero = 3, bucket_mb = 25, overlap = true, overlap_param_gather = true>} {}
// CHECK: #sim.data_parallel: overlap_param_gather needs zero 1 or 2, got zero 3

// -----

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 8, zero = 1, bucket_mb = 25, overlap = true>} {}
// CHECK: #sim.data_parallel is missing the field overlap_param_gather

// -----

builtin.module attributes {sim.data_parallel = #sim.data_parallel<dp = 8, zero = 1, fsdp = 2, bucket_mb = 25, overlap = true, overlap_param_gather = false>} {}
// CHECK: #sim.data_parallel has no field fsdp (fields: dp, zero, bucket_mb, overlap, overlap_param_gather)
