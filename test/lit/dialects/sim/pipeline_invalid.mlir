// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A #sim.pipeline names a known schedule, at least one stage, chunk and
// micro-batch, and a layer count for each of its pp * vpp virtual stages (its
// round trip: ops.mlir).

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 0, vpp = 1, schedule = "1f1b", microbatches = 8, layers = []>} {}
// CHECK: #sim.pipeline: pp must be >= 1, got 0

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 1, schedule = "1f1b", microbatches = 0, layers = [1, 1]>} {}
// CHECK: #sim.pipeline: microbatches must be >= 1, got 0

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 1, schedule = "2f2b", microbatches = 8, layers = [1, 1]>} {}
// CHECK: #sim.pipeline: schedule must be one of gpipe, 1f1b, interleaved, zb-h1, got '2f2b'

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 2, schedule = "interleaved", microbatches = 8, layers = [1, 1]>} {}
// CHECK: #sim.pipeline: layers must give each of the pp * vpp = 4 virtual stages a count >= 0, got [1, 1]

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 1, schedule = "1f1b", microbatches = 8, layers = [3, -1]>} {}
// CHECK: #sim.pipeline: layers must give each of the pp * vpp = 2 virtual stages a count >= 0, got [3, -1]

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, vpp = 1, schedule = "1f1b", layers = [1, 1]>} {}
// CHECK: #sim.pipeline is missing the field microbatches

// -----

builtin.module attributes {sim.pipeline = #sim.pipeline<pp = 2, stages = 2, vpp = 1, schedule = "1f1b", microbatches = 8, layers = [1, 1]>} {}
// CHECK: #sim.pipeline has no field stages (fields: pp, vpp, schedule, microbatches, layers)
