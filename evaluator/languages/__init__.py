"""Languages: how a submission's source becomes a callable in the child (DESIGN.md, "Language").

- `infer.py`: which language a file is, when the caller does not say.
- `precheck.py`: checks the parent can make without running anything (empty, Python syntax).
- `base.py`: the Candidate interface the runner uses, and LoadError (a verdict with a message).
- `python_module.py`: kernelbench and triton (a module defining ModelNew);
  `native.py`: cpp, cuda and hip (an extension module built by evaluator.build exposing `entry`).
"""

from evaluator.result import Language

NATIVE_LANGUAGES = frozenset({Language.CPP, Language.CUDA, Language.HIP})
PYTHON_LANGUAGES = frozenset({Language.KERNELBENCH, Language.TRITON})
