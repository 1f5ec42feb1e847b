"""`-t chakra`: write a lowered module as Chakra execution traces, one per rank.

Options:
- dir: the folder the traces go to (required): DIR/charon.<rank>.et and
  DIR/comm_group.json.
- ranks: the ranks to write, e.g. "0-7,56" (default: every rank of the mesh).

A module that is priced but not lowered, or targeted but not priced, is finished
with the default pipeline (`cost-annotate`, `lower-to-events`) first, as
`-t simulate` does. Prints one line per trace written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target as XdslTarget

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.interop.chakra_export import TRACE_NAME, Exporter, parse_ranks
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.report.output import check_output_dir


@dataclass(frozen=True)
class ChakraTarget(XdslTarget):
    name = "chakra"

    dir: str = ""
    ranks: str = ""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if not self.dir:
            raise CharonError("chakra: option 'dir' names no folder (-t 'chakra{dir=traces}')")
        check_output_dir(self.dir, "chakra: option 'dir'")
        if not any(isinstance(op, event.ProgramOp) for op in module.body.block.ops):
            CostAnnotatePass().apply(ctx, module)
            LowerToEventsPass().apply(ctx, module)
        exporter = Exporter(module)
        summary = exporter.write(self.dir, parse_ranks(self.ranks, exporter.mesh.world, "chakra: option 'ranks'"))
        for rank in summary.ranks:
            output.write(f"{summary.directory / f'{TRACE_NAME}.{rank}.et'}: {summary.nodes[rank]} nodes, "
                         f"{summary.classes[summary.rank_class[rank]].name}\n")
        output.write(f"{summary.directory / 'comm_group.json'}: {summary.groups} process groups\n")
