// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A #sim.cost states seconds, FLOPs and bytes, none negative, and the engine that
// priced the op (its round trip: ops.mlir).

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = -1.0e-06, flops = 32.0, bytes = 192.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: cost_invalid.mlir:6:1
// CHECK: #sim.cost: time_s must be finite and >= 0, got -1e-06

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = 1.0e-06, flops = -32.0, bytes = 192.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: #sim.cost: flops must be finite and >= 0, got -32.0

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = 1.0e-06, flops = 32.0, bytes = 192.0, engine = "">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: #sim.cost: engine must name the engine that priced the op

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = 1.0e-06, flops = 32.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: #sim.cost is missing the field bytes

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = 1.0e-06, flops = 32.0, bytes = 192.0, watts = 700.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: #sim.cost has no field watts (fields: time_s, flops, bytes, engine)

// -----

%a = sim.input "a" : tensor<4x8xbf16>
%b = sim.elementwise "add" %a, %a {sim.cost = #sim.cost<time_s = 1.0e-06, time_s = 2.0e-06, flops = 32.0, bytes = 192.0, engine = "analytic">} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: #sim.cost gives time_s twice
