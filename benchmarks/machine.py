"""What the numbers were measured on: date, machine, software, checkout."""
from __future__ import annotations

import datetime
import os
import platform
import sqlite3
import subprocess

from benchmarks.servers import ROOT


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args],
                              capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def describe() -> dict:
    memory = _memory_gb()
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--", "scheduler"))
    return {
        "date": datetime.datetime.now(datetime.timezone.utc)
        .strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(memory, 1) if memory else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "hostname": platform.node(),
        "commit": commit + (" + uncommitted changes in scheduler/"
                            if dirty else ""),
    }


def one_line(meta: dict) -> str:
    memory = f", {meta['memory_gb']:.0f} GB" if meta.get("memory_gb") else ""
    return (f"{meta['cores']} CPUs ({meta['cpu']}){memory}, {meta['os']}, "
            f"Python {meta['python']}")
