"""
Attach the hardware a module is compiled for (`sim.target` on the module).

Options:
- hardware: GPU name, a row of the bundled GPU table (`H100-SXM5-80GB`) or an
  alias (`H100`); required.
- gpus: GPUs in the job (default 8).
- gpus-per-node: GPUs per node; 0 takes the GPU's usual node size (default 0).

Every later pass and engine reads the target from the module, never from options.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from charon_ir.dialects.coll import GridOp
from charon_ir.errors import CharonError
from charon_ir.target.hardware import UnknownGpuError, load_gpu
from charon_ir.target.target import TARGET_ATTR, Target


@dataclass(frozen=True)
class SetTargetPass(ModulePass):
    name = "set-target"

    hardware: str = ""
    gpus: int = 8
    gpus_per_node: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.hardware:
            raise CharonError("set-target: option 'hardware' is required (e.g. hardware=H100)")
        try:
            gpu = load_gpu(self.hardware)
        except UnknownGpuError as e:
            raise CharonError(f"set-target: option 'hardware': {e}") from None
        per_node = self.gpus_per_node or gpu.gpus_per_node
        if self.gpus < 1 or per_node < 1:
            raise CharonError(
                f"set-target: options 'gpus' ({self.gpus}) and 'gpus-per-node' "
                f"({per_node}) must be >= 1"
            )
        for grid in op.walk():
            if isinstance(grid, GridOp) and grid.num_devices() > self.gpus:
                raise CharonError(
                    f"set-target: grid @{grid.sym_name.data} spans {grid.num_devices()} "
                    f"devices but option 'gpus' is {self.gpus}"
                )
        op.attributes[TARGET_ATTR] = Target(gpu, self.gpus, per_node).to_attr()
