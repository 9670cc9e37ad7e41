"""Helpers for tests that drive `weft mount`: start it on a fresh mount point, wait until the
kernel shows the mount, and unmount cleanly (SIGTERM, then fusermount3 -u as a fallback)."""

import os
import re
import subprocess
import time
import unittest

from s3lib import WeftProcess

MOUNTED_LINE = re.compile(rb"weft: mounted (.+) at ")


def fuse_available():
    return os.path.exists("/dev/fuse")


def require_fuse():
    if not fuse_available():
        raise unittest.SkipTest("/dev/fuse is missing: this machine cannot mount FUSE file systems")


def is_mounted(mountpoint):
    mountpoint = os.path.realpath(mountpoint)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == mountpoint for line in f)


class Mount(WeftProcess):
    """A `weft mount` process; `self.mountpoint` is usable once the constructor returns."""

    ready_pattern = MOUNTED_LINE
    what = "weft mount"

    def __init__(self, bin_path, mountpoint, source_args, extra_args=(), env=None, data=None):
        os.makedirs(mountpoint, exist_ok=True)
        self.mountpoint = mountpoint
        argv = [bin_path, *(["--data", data] if data else []), "mount", *source_args,
                *extra_args, mountpoint]
        super().__init__(argv, env=env)
        deadline = time.time() + 10
        while not is_mounted(mountpoint):
            if time.time() > deadline:
                raise RuntimeError(f"{mountpoint} is not mounted after the ready line")
            time.sleep(0.05)

    def stop(self, timeout=30):
        """SIGTERM: a clean stop unmounts and exits 0."""
        try:
            return super().stop(timeout)
        finally:
            if is_mounted(self.mountpoint):
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], check=False)
            for pipe in (self.proc.stdout, self.proc.stderr):
                pipe.close()
