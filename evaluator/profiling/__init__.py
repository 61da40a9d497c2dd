"""Profile mode: a hardware profile of a correct candidate's own kernels (issue #13, item 4).

- models.py      Profile / KernelProfile / StallReason: the `profile` field of the Result.
- ncu.py         NVIDIA: Nsight Compute's command line and its CSV, parsed into KernelProfiles.
- rocprof.py     AMD: rocprofv3's command line and its CSV files, parsed the same way.
- bottleneck.py  the plain-language line an agent reads: memory-, compute- or latency-bound,
                 placed on the problem's roofline.
- run.py         in the parent: runs the profiler around `python -m evaluator.profile_child` in
                 the sandbox, after the run, and turns whatever happened into a Profile.

Nothing here imports torch: the parent (which never touches a GPU) uses all of it except the
child (evaluator/profile_child.py).
"""
