"""Problem modules (KernelBench format); the catalog reads them as source, not as imports."""
