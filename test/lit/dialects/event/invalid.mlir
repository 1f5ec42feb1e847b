// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s

event.program @p ranks 1 {
  event.stream @compute compute
  %a = event.compute "mm" on @compute duration -1.0
}
// CHECK: error: 'event.compute' op duration_s must be finite and >= 0, got -1.0

// -----

event.program @p ranks 1 {
  event.stream @compute compute
  %a = event.comm "ar" on @compute duration 1.0
}
// CHECK: error: 'event.comm' op 'event.comm' must run on a comm or copy stream, @compute is a compute stream

// -----

event.program @p ranks 1 {
  %a = event.compute "mm" on @gpu duration 1.0
}
// CHECK: error: 'event.compute' op stream @gpu is not declared in this program

// -----

event.program @p ranks 1 {
  %s = event.wait()
  %l = event.loop 0 iter(%s) {
  ^bb0(%t: !event.token):
    event.yield %t
  }
}
// CHECK: error: 'event.loop' op count must be >= 1, got 0

// -----

event.program @p ranks 1 {
  event.stream @compute compute
  %a = event.compute "mm" on @compute duration 1.0e400
}
// CHECK: error: 'event.compute' op duration_s must be finite and >= 0, got inf

// -----

event.program @p ranks 0 {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op ranks must be >= 1, got 0

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "all_reduce" on @comm duration 1.0 {bytes = -64 : i64, group = 8 : i64}
}
// CHECK: error: 'event.comm' op bytes must be >= 0, got -64

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "all_reduce" on @comm duration 1.0 {bytes = 64 : i64, group = 0 : i64}
}
// CHECK: error: 'event.comm' op group must be >= 1, got 0

// -----

event.program @p ranks 8 {
  event.stream @compute compute
  %a = event.compute "mm" on @compute duration 1.0 {flops = -1 : i64}
}
// CHECK: error: 'event.compute' op flops must be >= 0, got -1

// -----

event.program @p ranks 1 {
  event.stream @compute compute
  %a = event.launch "launch" on @compute duration 1.0e-05
}
// CHECK: error: 'event.launch' op 'event.launch' must run on a host stream, @compute is a compute stream

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "send" on @comm duration 1.0 {bytes = 8 : i64, group = 2 : i64, channel = "pp0", src = 0 : i64}
}
// CHECK: error: 'event.comm' op a point-to-point event names channel, src and dst together, got only channel, src

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "recv" on @comm duration 1.0 {bytes = 8 : i64, group = 2 : i64, channel = "pp0", src = -1 : i64, dst = 0 : i64}
}
// CHECK: error: 'event.comm' op src must be >= 0, got -1

// -----

event.program @p ranks 8 {
  event.stream @comm comm
  %a = event.comm "all_reduce" on @comm duration 1.0 {flops = 8 : i64, bytes = 8 : i64, group = 8 : i64}
}
// CHECK: error: 'event.comm' op 'event.comm' declares no flops (its fields: engine, bytes, group, link, channel, src, dst)

// -----

event.program @p ranks 1 {
  event.stream @compute compute
  %a = event.compute "mm" on @compute duration 1.0 {bytes = 8 : i64}
}
// CHECK: error: 'event.compute' op 'event.compute' declares no bytes (its fields: engine, flops)

// -----

event.program @p ranks 1 attributes {stage = -1 : i64} {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op stage must be >= 0, got -1

// -----

event.program @p ranks 1 attributes {tokens = -8 : i64} {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op tokens must be >= 0, got -8

// -----

event.program @p ranks 1 attributes {recompute_flops = -1.0 : f64} {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op recompute_flops must be finite and >= 0, got -1.0

// -----

event.program @p ranks 1 attributes {hardware = ""} {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op hardware must name a GPU

// -----

event.program @p ranks 1 attributes {stage = "0"} {
  event.stream @compute compute
}
// CHECK: error: 'event.program' op "0" should be of base attribute integer

// -----

event.program @p ranks 1 {
  %s = event.wait()
  %l = event.loop 2 iter(%s) attributes {label = ""} {
  ^bb0(%t: !event.token):
    event.yield %t
  }
}
// CHECK: error: 'event.loop' op label must not be empty

// -----

event.program @p ranks 1 {
  event.stream @comm_host_d2h copy {axes = ["host"]}
  %a = event.compute "mm" on @comm_host_d2h duration 1.0
}
// CHECK: error: 'event.compute' op 'event.compute' must run on a compute stream, @comm_host_d2h is a copy stream
