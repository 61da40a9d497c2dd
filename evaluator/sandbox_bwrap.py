"""The bubblewrap command line for one sandboxed run, and a one-time probe that bwrap works.

What the candidate sees (everything read-only unless said otherwise):
  /usr, /bin, /lib* (as on the host: symlinks stay symlinks), /sys, a short list of /etc files
  (the loader cache, alternatives, TLS certificates, time zone; no passwd/shadow — synthetic
  passwd/group are written in), the Python installation and its sys.path, the `evaluator`
  package, the caller's `readonly_paths`; writable: the scratch dir and `writable_paths`;
  fresh /tmp and /dev/shm (size-capped tmpfs), a fresh /proc of its own pid namespace, a
  minimal /dev plus the GPU's device nodes only when `gpu=True`.
Namespaces: all (user, pid, net, ipc, uts, cgroup) — no network at all, not even loopback
services of the host. The candidate runs as uid/gid 65534 with no capabilities, cannot create
further user namespaces, and dies with its parent.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID = 65534

# /etc entries a Python + compiler + CUDA process needs. Anything else (shadow, ssh, the
# database's or broker's config, pip/npm credentials) stays invisible.
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "pki",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "mime.types",
    "OpenCL",
)
# Toolkits that may live outside /usr on GPU machines.
_OPTIONAL_RO = ("/opt/rocm", "/opt/nvidia", "/usr/local/cuda")
_NEVER_BIND = {Path("/"), Path("/tmp"), Path("/root"), Path("/home"), Path("/var/tmp")}
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

PASSWD = f"root:x:0:0:root:/root:/usr/sbin/nologin\nkjudge:x:{SANDBOX_UID}:{SANDBOX_UID}:kjudge:/tmp:/usr/sbin/nologin\n"
GROUP = f"root:x:0:\nkjudge:x:{SANDBOX_UID}:\n"


@dataclass(frozen=True)
class Probe:
    available: bool
    userns: bool  # --unshare-user --uid works (drops to an unprivileged uid inside)
    reason: str = ""


def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def probe() -> Probe:
    """Check once per process that bwrap can create the sandbox we need."""
    exe = _bwrap()
    if exe is None:
        return Probe(False, False, "the `bwrap` executable (Debian package bubblewrap) is not installed")
    base = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/"]
    base += ["--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL"]
    userns = [
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
    ]
    errors = []
    for extra, has_userns in ((userns, True), ([], False)):
        try:
            proc = subprocess.run(
                [*base, *extra, "true"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(str(exc))
            continue
        if proc.returncode == 0:
            return Probe(True, has_userns)
        errors.append(proc.stderr.decode(errors="replace").strip())
    return Probe(False, False, "bubblewrap cannot create a sandbox here: " + " / ".join(errors))


def python_paths() -> list[Path]:
    """The interpreter's install, its site-packages and the evaluator package, read-only inside.

    Not every sys.path entry: the script's directory or the cwd (say /tmp or a home directory)
    can be on it, and binding those would show other runs' scratch dirs or the worker's files.
    """
    import evaluator

    prefixes = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    prefixes.add(Path(os.path.realpath(sys.executable)).parent.parent)
    paths = list(prefixes)
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = Path(os.path.realpath(entry))
        if real.name in ("site-packages", "dist-packages") or any(q in real.parents for q in prefixes):
            paths.append(real)
    # Only the evaluator package, not the project root: an operator's KJUDGE_HOME (database,
    # other submissions) could sit under the checkout.
    paths += [Path(os.path.realpath(p)) for p in evaluator.__path__]
    return [p for p in paths if p.exists() and p not in _NEVER_BIND]


@functools.cache
def _ensure_nvidia_nodes() -> None:
    """Create /dev/nvidia-uvm (and nvidia0) if the driver has not yet: normally the first CUDA
    process does it through the setuid nvidia-modprobe, which cannot work inside the sandbox, and
    kjudge's parent never initializes CUDA itself."""
    if os.path.exists("/dev/nvidiactl") and not os.path.exists("/dev/nvidia-uvm"):
        exe = shutil.which("nvidia-modprobe")
        if exe:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run([exe, "-u", "-c=0"], capture_output=True, timeout=30, check=False)


def gpu_device_nodes() -> list[str]:
    _ensure_nvidia_nodes()
    nodes = sorted(glob.glob("/dev/nvidia*"))  # nvidiactl, nvidia-uvm(-tools), nvidia0..N, -modeset, -caps
    nodes += [p for p in ("/dev/kfd", "/dev/dri") if os.path.exists(p)]
    return nodes


def _dedupe(paths: Sequence[Path]) -> list[Path]:
    """Drop paths inside another one in the list; parents first (bind order matters)."""
    out: list[Path] = []
    for p in sorted(set(paths), key=lambda q: (len(q.parts), str(q))):
        if not any(p == q or q in p.parents for q in out):
            out.append(p)
    return out


def build_argv(
    command: Sequence[str],
    *,
    scratch: Path,
    gpu: bool,
    readonly_paths: Sequence[Path],
    writable_paths: Sequence[Path],
    tmp_bytes: int,
    userns: bool,
    passwd_fd: int,
    group_fd: int,
    extra_readonly: Sequence[Path] = (),
) -> list[str]:
    exe = _bwrap() or "bwrap"
    argv = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1"]
    argv += ["--hostname", "kjudge"]
    if userns:
        argv += ["--unshare-user", "--disable-userns"]
        argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in _TOP_LEVEL:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for name in _ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--ro-bind-data", str(passwd_fd), "/etc/passwd", "--ro-bind-data", str(group_fd), "/etc/group"]
    argv += ["--ro-bind-try", "/sys", "/sys"]  # CPU topology for torch/OpenMP; NVML/KFD sysfs
    for opt in _OPTIONAL_RO:
        if os.path.exists(opt) and not opt.startswith("/usr/"):
            argv += ["--ro-bind", opt, opt]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/dev/shm"]
    if gpu:
        for node in gpu_device_nodes():
            argv += ["--dev-bind", node, node]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    # Read-only and writable binds in one list, parents before children: a scratch dir under
    # /tmp or under a read-only cache must be bound after its parent or the parent hides it.
    ro = _dedupe([*python_paths(), *[Path(p) for p in extra_readonly], *map(Path, readonly_paths)])
    rw = [Path(os.path.realpath(p)) for p in [scratch, *writable_paths]]
    binds = [(p, "--ro-bind") for p in ro if p not in rw] + [(p, "--bind") for p in rw]
    for path, flag in sorted(binds, key=lambda b: (len(b[0].parts), b[1] == "--bind")):
        argv += [flag, str(path), str(path)]
    # The sandbox's own root is a tmpfs bwrap builds the tree in; freeze it so that nothing
    # outside scratch, /tmp and /dev/shm is writable (not even in memory).
    argv += ["--remount-ro", "/"]
    argv += ["--chdir", str(Path(os.path.realpath(scratch)))]
    argv += ["--", *command]
    return argv
