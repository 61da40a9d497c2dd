"""kjudge: the client SDK and the `kjudge` command. Thin: it calls evaluator/, api/ and worker/."""

__version__ = "0.1.0"
