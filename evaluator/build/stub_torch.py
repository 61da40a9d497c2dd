"""A stand-in `torch` for importing a KernelBench candidate only to learn what it builds.

The ahead-of-run build (evaluator/build/ahead.py) needs the arguments of the candidate's
`load_inline`/`load` calls, not torch: importing the real one cost 5-8 s of every KernelBench
compile on a busy compile host. While `recording(on_load_inline, on_load)` is active, `import
torch` (and any `torch.*`) gives stub modules: every attribute is a `Stub` that can be called,
subclassed (`class ModelNew(nn.Module)`), decorated with, iterated (empty) and combined with
numbers, and `torch.utils.cpp_extension.load_inline` / `load` are the given recorders.

Nothing here decides a verdict. A candidate that needs real torch at import (an isinstance
check, a tensor computed at module level) fails under the stub; the caller then imports it again
with the real torch. A recorded build whose arguments came out differently under the stub (an
arch read from the device, say) is a different build key, which the run never looks up.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

ROOT = "torch"
NEEDS_REAL = "torch.utils.hipify"


class Stub:
    """Anything of torch's, for as long as the import lasts."""

    def __init__(self, name: str = ROOT) -> None:
        self._stub_name = name

    def __getattr__(self, attr: str) -> Stub:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub(f"{self._stub_name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A decorator (`@torch.jit.script`, `@torch.no_grad()`): give back what it decorates.
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Stub):
            return args[0]
        return Stub(f"{self._stub_name}()")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (StubBase,)

    def __getitem__(self, key: Any) -> Stub:
        return Stub(f"{self._stub_name}[]")

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __bool__(self) -> bool:
        return True

    def __index__(self) -> int:
        return 0

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __str__(self) -> str:
        return self._stub_name

    __repr__ = __str__

    def _same(self, *_: Any) -> Stub:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __pow__ = __rpow__ = _same
    __mod__ = __rmod__ = __neg__ = __pos__ = __abs__ = __matmul__ = __rmatmul__ = _same


class StubBase:
    """What `class ModelNew(nn.Module)` derives from under the stub."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __getattr__(self, attr: str) -> Stub:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub(attr)


class StubModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, extension: dict[str, Callable[..., Any]]) -> None:
        self._extension = extension

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ROOT and not fullname.startswith(ROOT + "."):
            return None
        if fullname.startswith(NEEDS_REAL):
            # Data kjudge itself reads (HIP-on-CUDA's name mappings): a stub would build wrong.
            raise ImportError(f"{fullname} needs the real torch")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = StubModule(spec.name)
        module.__path__ = []  # a package: `import torch.nn.functional` goes on
        if spec.name == f"{ROOT}.utils.cpp_extension":
            for name, function in self._extension.items():
                setattr(module, name, function)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextlib.contextmanager
def recording(on_load_inline: Callable[..., Any], on_load: Callable[..., Any]) -> Iterator[None]:
    """`import torch` gives the stub while active. Refuses to start if the real torch is loaded
    (the stub would not be what the candidate imports)."""
    if ROOT in sys.modules:
        raise RuntimeError("the real torch is already imported in this process")
    finder = _Finder({"load_inline": on_load_inline, "load": on_load})
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == ROOT or n.startswith(ROOT + ".")]:
            del sys.modules[name]
