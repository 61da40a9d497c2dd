"""kjudge's built-in problems (KernelBench format) in three levels, their reference kernels,
roofline data, and the code that validates and catalogues problems (problems/catalog.py)."""
