"""kjudge: the client SDK and the `kjudge` command. Thin: it calls evaluator/, api/ and worker/."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["AsyncClient", "Client", "KjudgeError", "__version__"]

if TYPE_CHECKING:
    from kjudge.client import AsyncClient, Client, KjudgeError


def __getattr__(name: str) -> Any:
    # Lazy: `import kjudge` (e.g. for `kjudge eval` on a GPU node) must not pull in httpx.
    if name in ("Client", "AsyncClient", "KjudgeError"):
        from kjudge import client

        return getattr(client, name)
    raise AttributeError(f"module 'kjudge' has no attribute {name!r}")
