"""nn.Modules given to the Python API where a model name goes.

A run names a user's module by a handle (`module:TinyGPT@7f3a...`), a string
that TrainingConfig, sweeps and reports carry like any model name; the frontend
traces the module the handle points to. The registry holds modules weakly: a
handle lives as long as the caller's module does. torch is not imported here.
"""

from __future__ import annotations

import weakref
from typing import Any

from charon_ir.errors import CharonError

PREFIX = "module:"

_MODULES: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def is_handle(model: str) -> bool:
    return model.startswith(PREFIX)


def register(module: Any) -> str:
    """The handle of `module` (the same one each time it is registered)."""
    handle = f"{PREFIX}{type(module).__name__}@{id(module):x}"
    _MODULES[handle] = module
    return handle


def lookup(handle: str) -> Any:
    module = _MODULES.get(handle)
    if module is None:
        raise CharonError(f"{handle}: no such module in this process (a handle names a module passed to the "
                          "Python API, alive in the same process)")
    return module


def model_name(model: Any) -> str:
    """A model argument of the API as the string a config carries: names and
    paths as they are, an nn.Module by its handle."""
    if isinstance(model, str):
        return model
    if hasattr(model, "__fspath__"):
        return str(model)
    if hasattr(model, "named_parameters") and callable(model):
        return register(model)
    raise CharonError(f"model: expected a bundled name, a config.json or .mlir path, or an nn.Module, "
                      f"not {type(model).__name__}")
