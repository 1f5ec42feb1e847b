# lit configuration for Charon-IR's FileCheck tests.
import os
import sys

import lit.formats

config.name = "Charon-IR"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".cluster"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)

# lit scrubs the environment: put the venv's bin (charon-opt, xdsl-opt, filecheck)
# first on PATH. dirname(sys.executable), not realpath: that would leave the venv.
venv_bin = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([venv_bin, config.environment.get("PATH", "")])
for var in ("HOME", "CHARON_CACHE_DIR", "CHARON_PROFILE_DB"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%examples", os.path.join(os.path.dirname(__file__), "..", "..", "examples")))
