"""Importing a built extension module by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from evaluator.build.models import BuildOutput


def import_extension(name: str, path: Path) -> ModuleType:
    """Import the extension at `path`; its PyInit_<name> symbol must match `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load extension {name} from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def load_module(output: BuildOutput) -> ModuleType:
    if not output.ok or output.module_path is None or output.module_name is None:
        raise ImportError("the build did not produce a module")
    import torch  # noqa: F401  (the extension links against torch's libraries)

    return import_extension(output.module_name, output.module_path)
