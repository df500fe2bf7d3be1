"""What the machine a calibration runs on is: its CPU's name and vendor, vector extension, cache
sizes, a host id and the CPU family its profile names (shared by ``calibrate`` and
``calibrate_xla``)."""

from __future__ import annotations

import functools
import os
import platform
import socket


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo; else what ``platform`` says)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def simd(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The widest vector extension the CPU reports (its ``flags`` / ``Features`` line): "avx512",
    "avx2", "avx", "sse" on x86; "sve" or "neon" on Arm; "unknown" where none is read. The
    kernels a runtime picks follow it (onnxruntime's NCHWc blocks are 16 fp32 with AVX-512, 8
    with AVX2), so a profile calibrated on one predicts another's kernels only approximately."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                key = line.split(":", 1)[0].strip().lower()
                if key in ("flags", "features"):
                    flags = set(line.split(":", 1)[1].split())
                    for name, have in (("avx512", "avx512f"), ("avx2", "avx2"), ("avx", "avx"),
                                       ("sve", "sve"), ("neon", "asimd"), ("sse", "sse2")):
                        if have in flags:
                            return name
                    break
    except OSError:
        pass
    return "unknown"


@functools.lru_cache(maxsize=1)
def this_simd() -> str:
    """``simd()`` of this machine, read once a process (a prediction asks on every call)."""
    return simd()


def l2_cache_bytes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """Bytes of one core's L2 data/unified cache (Linux sysfs; else ``os.sysconf``); 0 if unknown."""
    return cache_level_bytes(2, sysfs)


def cache_level_bytes(want: int, sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """Bytes of cpu0's level-``want`` data/unified cache (Linux sysfs; else ``os.sysconf``);
    0 if unknown."""
    try:
        for d in sorted(os.listdir(sysfs)):
            base = os.path.join(sysfs, d)
            try:
                with open(os.path.join(base, "level")) as f:
                    level = f.read().strip()
                with open(os.path.join(base, "type")) as f:
                    kind = f.read().strip()
                with open(os.path.join(base, "size")) as f:
                    size = f.read().strip()
            except OSError:
                continue
            if level == str(want) and kind in ("Unified", "Data"):
                mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(size[-1:].upper(), 1)
                digits = size.rstrip("KkMmGg")
                return int(digits) * mult if digits.isdigit() else 0
    except OSError:
        pass
    try:
        return max(int(os.sysconf(f"SC_LEVEL{want}_CACHE_SIZE")), 0)
    except (ValueError, OSError, AttributeError):
        return 0


def vendor(cpu: str) -> str:
    low = cpu.lower()
    for key, name in (("amd", "AMD"), ("intel", "Intel"), ("apple", "Apple"), ("ampere", "Ampere"),
                      ("arm", "Arm"), ("graviton", "AWS")):
        if key in low:
            return name
    return "unknown"


def host_id() -> str:
    """The host name as a profile id part (lower case; letters, digits, '-', '.', '_')."""
    host = socket.gethostname().lower()
    return "".join(ch if ch.isalnum() or ch in "-._" else "-" for ch in host).strip("-.") or "host"


def cpu_family() -> str:
    """The family a calibrated profile names: arm-cpu on an Arm machine, else x86-cpu."""
    return "arm-cpu" if platform.machine().lower() in ("arm64", "aarch64") else "x86-cpu"
